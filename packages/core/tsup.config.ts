import { defineConfig } from 'tsup'

export default defineConfig([
  {
    // Three public entries sharing their modules in chunks (splitting, for CommonJS too), so
    // that state such as the once-per-process warnings and classes such as ConfigError exist
    // once whichever entry loads them.
    entry: {
      index: 'src/index.ts',
      adapter: 'src/adapter.ts',
      simulate: 'src/simulate/index.ts',
      'web-node': 'src/web-node.ts',
    },
    format: ['cjs', 'esm'],
    splitting: true,
    dts: { compilerOptions: { ignoreDeprecations: '6.0' } },
    // Both builds run at once: leave the CLI's output alone.
    clean: ['!cli.js', '!cli.js.map', '!rules-worker.js', '!rules-worker.js.map', '!web.*'],
    // web-node's types are web's (the same names): only web.d.ts is published.
    sourcemap: true,
    target: 'node20',
    // prometheusMetrics loads the optional prom-client with createRequire(__filename).
    shims: true,
  },
  {
    // @sluice/core/web: one file per format with no Node import, for runtimes with web APIs
    // only. Built apart: the ESM shims above (node:path, node:url) land in the chunk every
    // split entry shares. So its classes (ConfigError...) are its own copies.
    entry: { web: 'src/web.ts' },
    format: ['cjs', 'esm'],
    dts: { compilerOptions: { ignoreDeprecations: '6.0' } },
    clean: false,
    sourcemap: true,
    target: 'es2022',
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
