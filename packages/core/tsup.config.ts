import { defineConfig } from 'tsup'

export default defineConfig([
  {
    entry: ['src/index.ts'],
    format: ['cjs', 'esm'],
    dts: { compilerOptions: { ignoreDeprecations: '6.0' } },
    // Both builds run at once: leave the CLI's output alone.
    clean: ['!cli.js', '!cli.js.map'],
    sourcemap: true,
    target: 'node20',
    // prometheusMetrics loads the optional prom-client with createRequire(__filename).
    shims: true,
  },
  {
    // `sluice` bin: CommonJS only (it is run, never imported), with the shebang npm links to.
    entry: { cli: 'src/cli.ts' },
    format: ['cjs'],
    banner: { js: '#!/usr/bin/env node' },
    clean: false,
    sourcemap: true,
    target: 'node20',
  },
])
