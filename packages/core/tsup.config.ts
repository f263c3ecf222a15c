import { defineConfig } from 'tsup'

export default defineConfig([
  {
    entry: ['src/index.ts'],
    format: ['cjs', 'esm'],
    dts: { compilerOptions: { ignoreDeprecations: '6.0' } },
    // Both builds run at once: leave the CLI's output alone.
    clean: ['!cli.js', '!cli.js.map', '!rules-worker.js', '!rules-worker.js.map'],
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
  {
    // The rules reload worker (src/rules/reload-worker.ts): started by file name, so its own file.
    entry: { 'rules-worker': 'src/rules/reload-worker.ts' },
    format: ['cjs'],
    clean: false,
    sourcemap: true,
    target: 'node20',
    shims: true,
  },
])
