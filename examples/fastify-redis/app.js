// Fastify app whose limits live in Redis, so every instance behind the load balancer shares
// them: 5 requests per 10 seconds per client, 2 logins a minute. When Redis is down, a memory
// limiter with a share of the limit takes over (see docs/redis.md, "Failure modes").
// Run: REDIS_URL=redis://127.0.0.1:6379 node examples/fastify-redis/app.js, then
//      curl -i http://localhost:3000/
const { once } = require('node:events')
const Fastify = require('fastify')
const { Redis } = require('ioredis')
const { createLimiter } = require('@sluice/core')
const { RedisStore } = require('@sluice/redis')
const { rateLimit } = require('@sluice/fastify')

const INSTANCES = Number(process.env.INSTANCES) || 2

async function createApp(options = {}) {
  const client = new Redis(options.redisUrl ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', {
    // Fail fast while Redis is away instead of queueing every request (docs/redis.md).
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    retryStrategy: (attempt) => Math.min(attempt * 100, 2000),
  })
  // ioredis reports connection errors here; the limiter answers them with onStoreError.
  client.on('error', () => undefined)
  // With no offline queue, commands sent before the connection is ready fail (and would be
  // answered by the fallback): wait for it before serving.
  if (client.status !== 'ready') await once(client, 'ready')
  const store = new RedisStore({ client })
  const app = Fastify()
  app.addHook('onClose', () => client.quit().catch(() => client.disconnect()))
  await app.register(rateLimit, {
    store,
    limit: 5,
    window: '10 seconds',
    timeoutMs: 200,
    // Redis down: each instance allows its share of the limit from memory.
    onStoreError: createLimiter({ limit: Math.max(1, Math.floor(5 / INSTANCES)), window: '10s' }),
    ...options.rateLimit,
  })
  app.get('/', async (request) => ({
    hello: 'world',
    remaining: request.rateLimit.remaining,
    degraded: request.rateLimit.degraded,
  }))
  app.post('/login', { config: { rateLimit: { limit: 2, window: '1 minute' } } }, async () => ({
    ok: true,
  }))
  return app
}

module.exports = { createApp }

if (require.main === module) {
  const port = Number(process.env.PORT) || 3000
  createApp()
    .then((app) => app.listen({ port }))
    .then((address) => console.log(`fastify-redis on ${address}/`))
}
