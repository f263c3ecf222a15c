import { defineConfig } from 'tsup'

export default defineConfig([
  {
    // The simulator's API (simulate, renderSvg, traces).
    entry: { index: 'src/index.ts' },
    format: ['cjs', 'esm'],
    dts: { compilerOptions: { ignoreDeprecations: '6.0' } },
    clean: ['!cli.js', '!cli.js.map'],
    sourcemap: true,
    target: 'node20',
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
