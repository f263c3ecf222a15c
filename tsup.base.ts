import { defineConfig } from 'tsup'

/** The build every published package shares: CommonJS + ESM + types from src/index.ts. */
export default defineConfig({
  entry: ['src/index.ts'],
  format: ['cjs', 'esm'],
  dts: { compilerOptions: { ignoreDeprecations: '6.0' } },
  clean: true,
  sourcemap: true,
  target: 'node20',
})
