// One RedisStore for the app, on Upstash's REST API (UPSTASH_REDIS_REST_URL and
// UPSTASH_REDIS_REST_TOKEN, which the Vercel integration sets): every function instance and
// region shares the counts. RedisStore needs node:crypto, so the files using it run on the
// Node.js runtime (the default for route handlers; middleware says so in its config).
import { RedisStore } from '@sluice/redis'
import { Redis } from '@upstash/redis'

export const store = new RedisStore({ client: Redis.fromEnv() })
