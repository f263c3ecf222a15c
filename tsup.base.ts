import { defineConfig, type Options } from 'tsup'
import { transform } from 'sucrase'

type Plugin = NonNullable<Options['plugins']>[number]

/**
 * The CommonJS chunks of a split build (`splitting: true`), converted from esbuild's ESM output
 * with the same sucrase `imports` transform tsup applies, but with its syntax transforms off:
 * tsup's own conversion also rewrote every `?.` and `??` into `_optionalChain` /
 * `_nullishCoalesce` calls (an allocation per use) and class fields into `__init` methods, on
 * the hot paths of the CommonJS build only. Node 20 runs that syntax natively. tsup's conversion
 * is turned off by clearing the context's `splitting` flag at build start (esbuild has been
 * configured by then; the flag is read again only by that conversion).
 */
export const cjsSplitting: Plugin = {
  name: 'cjs-splitting-native-syntax',
  buildStart() {
    if (this.format === 'cjs' && this.splitting === true) this.splitting = false
  },
  renderChunk(code, info) {
    if (this.format !== 'cjs' || this.options.splitting !== true || this.options.treeshake) return
    if (!/\.(js|cjs)$/.test(info.path)) return
    const result = transform(code, {
      filePath: info.path,
      transforms: ['imports'],
      disableESTransforms: true,
      sourceMapOptions: this.options.sourcemap ? { compiledFilename: info.path } : undefined,
    })
    return { code: result.code, map: result.sourceMap }
  },
}

/** The build every published package shares: CommonJS + ESM + types from src/index.ts. */
export default defineConfig({
  entry: ['src/index.ts'],
  format: ['cjs', 'esm'],
  dts: { compilerOptions: { ignoreDeprecations: '6.0' } },
  clean: true,
  sourcemap: true,
  target: 'node20',
  plugins: [cjsSplitting],
})
