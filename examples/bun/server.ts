// Bun: 20 requests a minute per client address, shared by every instance through Upstash
// (UPSTASH_REDIS_REST_URL and UPSTASH_REDIS_REST_TOKEN). Run: bun examples/bun/server.ts
import { rateLimit } from '@sluice/fetch'
import { RedisStore } from '@sluice/redis'
import { Redis } from '@upstash/redis'

const limited = rateLimit({
  limit: 20,
  window: '1m',
  store: new RedisStore({ client: Redis.fromEnv() }),
  ip: (request) => server.requestIP(request)?.address,
})

const server = Bun.serve({
  port: Number(process.env.PORT ?? 3000),
  hostname: '127.0.0.1',
  fetch: (request) => limited(request, () => new Response('hello from Bun\n')),
})
console.log(`Listening on http://${server.hostname}:${server.port}/`)
