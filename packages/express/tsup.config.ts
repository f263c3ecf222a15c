import { defineConfig } from 'tsup'
import base from '../../tsup.base'

// Two entries: the main one and express-rate-limit's drop-in (`@sluice/express/compat`). They
// share modules in chunks (splitting, CommonJS too), so the `req.rateLimit` accessors on
// Express's request prototype exist once whichever entry installs them.
export default defineConfig({
  ...base,
  entry: { index: 'src/index.ts', compat: 'src/compat/index.ts' },
  splitting: true,
})
