/// <reference lib="deno.ns" />
// Deno: 20 requests a minute per client address, shared by every Deno Deploy isolate through
// Upstash (UPSTASH_REDIS_REST_URL and UPSTASH_REDIS_REST_TOKEN). Deno gives the address with each
// request (info.remoteAddr), so it is handed to the limiter per call.
// Run: deno run --allow-net --allow-env examples/deno/server.ts
import { rateLimit } from '@sluice/fetch'
import { RedisStore } from '@sluice/redis'
import { Redis } from '@upstash/redis'

const addresses = new WeakMap<Request, string>()
const limited = rateLimit({
  limit: 20,
  window: '1m',
  store: new RedisStore({ client: Redis.fromEnv() }),
  ip: (request) => addresses.get(request),
})

Deno.serve(
  { port: Number(Deno.env.get('PORT') ?? 8000), hostname: '127.0.0.1' },
  (request, info) => {
    addresses.set(request, info.remoteAddr.hostname)
    return limited(request, () => new Response('hello from Deno\n'))
  },
)
