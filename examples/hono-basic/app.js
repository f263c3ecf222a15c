// Hono app: 5 requests per 10 seconds, keyed by API token when one is sent, else by the client
// address from Hono's getConnInfo for Node (use hono/bun, hono/deno or hono/cloudflare-workers
// elsewhere).
// Run: node examples/hono-basic/app.js, then curl -i -H 'x-api-key: demo' http://localhost:3000/
const { Hono } = require('hono')
const { serve } = require('@hono/node-server')
const { getConnInfo } = require('@hono/node-server/conninfo')
const { rateLimiter, headerKey } = require('@sluice/hono')

function createApp(options = {}) {
  const app = new Hono()
  app.use(
    rateLimiter({ limit: 5, window: '10s', key: headerKey('x-api-key'), getConnInfo, ...options }),
  )
  app.get('/', (c) => c.json({ hello: 'world', remaining: c.get('rateLimit').remaining }))
  return app
}

module.exports = { createApp }

if (require.main === module) {
  const port = Number(process.env.PORT) || 3000
  serve({ fetch: createApp().fetch, port }, () =>
    console.log(`hono-basic on http://localhost:${port}/`),
  )
}
