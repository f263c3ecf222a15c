// Hono app: 5 requests per 10 seconds, keyed by API key when the request sends one that was
// issued, else by the client address from Hono's getConnInfo for Node (use hono/bun, hono/deno
// or hono/cloudflare-workers elsewhere). A made-up key is no bucket of its own: it is checked
// before it is used as a key (docs/hono.md, "Keys and options").
// Run: node examples/hono-basic/app.js, then curl -i -H 'x-api-key: demo' http://localhost:3000/
const { Hono } = require('hono')
const { serve } = require('@hono/node-server')
const { getConnInfo } = require('@hono/node-server/conninfo')
const { rateLimiter } = require('@sluice/hono')

// The API keys issued (a database or signed tokens in a real app).
const API_KEYS = new Set(['demo', 'other'])

function byIssuedKey(c) {
  const token = c.req.header('x-api-key')
  return token !== undefined && API_KEYS.has(token) ? `key:${token}` : undefined
}

function createApp(options = {}) {
  const app = new Hono()
  app.use(rateLimiter({ limit: 5, window: '10s', key: byIssuedKey, getConnInfo, ...options }))
  app.get('/', (c) => c.json({ hello: 'world', remaining: c.get('rateLimit')?.remaining ?? null }))
  return app
}

module.exports = { createApp }

if (require.main === module) {
  const port = Number(process.env.PORT) || 3000
  serve({ fetch: createApp().fetch, port }, () =>
    console.log(`hono-basic on http://localhost:${port}/`),
  )
}
