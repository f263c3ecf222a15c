// The bench's Worker on RedisStore with @upstash/redis: two limits per request (100 a second
// and 10,000 an hour per address), through the REST gateway named in the bindings.
import { rateLimit, type RateLimited } from '@sluice/fetch'
import { RedisStore } from '@sluice/redis'
import { Redis } from '@upstash/redis/cloudflare'

let limited: RateLimited | undefined

export default {
  async fetch(
    request: Request,
    env: { UPSTASH_REDIS_REST_URL: string; UPSTASH_REDIS_REST_TOKEN: string },
  ) {
    limited ??= rateLimit({
      limits: [
        { limit: 100, window: '1s' },
        { limit: 10_000, window: '1h' },
      ],
      store: new RedisStore({ client: Redis.fromEnv(env) }),
      ip: (r) => r.headers.get('cf-connecting-ip'),
    })
    return limited(request, () => new Response('ok'))
  },
}
