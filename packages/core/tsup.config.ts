import { defineConfig } from 'tsup'
import { cjsSplitting } from '../../tsup.base'

export default defineConfig([
  {
    // Public entries sharing their modules in chunks (splitting, for CommonJS too), so that
    // state such as the monotonic source and classes such as ConfigError exist once whichever
    // entry loads them.
    entry: {
      index: 'src/index.ts',
      adapter: 'src/adapter.ts',
      'web-node': 'src/web-node.ts',
    },
    format: ['cjs', 'esm'],
    splitting: true,
    dts: { compilerOptions: { ignoreDeprecations: '6.0' } },
    // Both builds run at once: leave the web build's output alone.
    clean: ['!web.*'],
    // web-node's types are web's (the same names): only web.d.ts is published.
    sourcemap: true,
    target: 'node20',
    // prometheusMetrics loads the optional prom-client with createRequire(__filename).
    shims: true,
    // CommonJS chunks keep native `?.`, `??` and class fields (see cjsSplitting).
    plugins: [cjsSplitting],
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
])
