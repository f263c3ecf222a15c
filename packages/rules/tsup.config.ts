import { defineConfig } from 'tsup'

export default defineConfig([
  {
    entry: { index: 'src/index.ts' },
    format: ['cjs', 'esm'],
    dts: { compilerOptions: { ignoreDeprecations: '6.0' } },
    // Both builds run at once: leave the worker's output alone.
    clean: ['!rules-worker.js', '!rules-worker.js.map'],
    sourcemap: true,
    target: 'node20',
    // schema.ts loads zod with createRequire(__filename); the worker is found by __dirname.
    shims: true,
  },
  {
    // The rules reload worker (src/reload-worker.ts): started by file name, so its own file.
    entry: { 'rules-worker': 'src/reload-worker.ts' },
    format: ['cjs'],
    clean: false,
    sourcemap: true,
    target: 'node20',
    shims: true,
  },
])
