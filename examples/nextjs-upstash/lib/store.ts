// One RedisStore for the app, on Upstash's REST API (UPSTASH_REDIS_REST_URL and
// UPSTASH_REDIS_REST_TOKEN, which the Vercel integration sets): every function instance and
// region shares the counts. RedisStore and @upstash/redis use web APIs only (fetch, Web Crypto),
// so the files using them run on the edge runtime or the Node.js one alike.
import { RedisStore } from '@sluice/redis'
import { Redis } from '@upstash/redis'

export const store = new RedisStore({ client: Redis.fromEnv() })
