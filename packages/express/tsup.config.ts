import { defineConfig } from 'tsup'
import base from '../../tsup.base'

// Two entries: the main one and express-rate-limit's drop-in (`@sluice/express/compat`). They
// share modules in chunks (splitting, CommonJS too), so the `req.rateLimit` accessors on
// Express's request prototype exist once whichever entry installs them.
// `require('express-rate-limit')` is the middleware function itself, with the named exports
// as its properties: the compat entry's CommonJS build is made the same (the marker
// `ipKeyGenerator` is exported by the compat entry alone, not by the main one or the chunks).
const CALLABLE_COMPAT = `if (typeof module.exports.default === 'function' && module.exports.ipKeyGenerator) module.exports = Object.assign(module.exports.default, module.exports)`

export default defineConfig({
  ...base,
  entry: { index: 'src/index.ts', compat: 'src/compat/index.ts' },
  splitting: true,
  footer: ({ format }) => (format === 'cjs' ? { js: CALLABLE_COMPAT } : {}),
})
