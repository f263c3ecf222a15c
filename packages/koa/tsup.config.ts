import { defineConfig } from 'tsup'
import base from '../../tsup.base'

// Two entries: the main one and koa-ratelimit's drop-in (`@sluice/koa/compat`), whose CommonJS
// build is the function itself (cjsInterop), as `require('koa-ratelimit')` is. shims: the ESM
// build gets `__filename`, which the compat entry resolves @sluice/redis from.
export default defineConfig({
  ...base,
  entry: { index: 'src/index.ts', compat: 'src/compat/index.ts' },
  cjsInterop: true,
  shims: true,
  splitting: true,
})
