// Fastify app: 5 requests per 10 seconds globally, a stricter /login, an unlimited /health.
// Run: node examples/fastify-basic/app.js, then curl -i http://localhost:3000/
const Fastify = require('fastify')
const { rateLimit } = require('@sluice/fastify')

async function createApp(options = {}) {
  // Behind a proxy, trust exactly it by address (see docs/proxies.md): Fastify({ trustProxy: '10.0.0.1' })
  const app = Fastify()
  await app.register(rateLimit, { limit: 5, window: '10 seconds', ...options })
  app.get('/', async (request) => ({ hello: 'world', remaining: request.rateLimit.remaining }))
  app.post('/login', { config: { rateLimit: { limit: 2, window: '1 minute' } } }, async () => ({
    ok: true,
  }))
  app.get('/health', { config: { rateLimit: false } }, async () => ({ ok: true }))
  return app
}

module.exports = { createApp }

if (require.main === module) {
  const port = Number(process.env.PORT) || 3000
  createApp()
    .then((app) => app.listen({ port }))
    .then((address) => console.log(`fastify-basic on ${address}/`))
}
