// A Sluice RedisStore behind the compatibility entry, on a real redis-server: the per-key
// windows of express-rate-limit, shared by two middleware instances (two app servers).
import { RedisStore } from '@sluice/redis'
import { rateLimit } from '@sluice/express/compat'
import { startRedis } from '@sluice/testkit'
import { Redis } from 'ioredis'
import { serve } from './serve'

test("two middleware on one RedisStore share each key's window, counted from its first request", async () => {
  const redis = await startRedis()
  const client = new Redis({ host: redis.host, port: redis.port, maxRetriesPerRequest: 1 })
  try {
    const store = new RedisStore({ client })
    const options = { limit: 3, windowMs: 60_000, store, keyGenerator: () => 'shared-client' }
    const first = await serve(rateLimit(options))
    const second = await serve(rateLimit(options))
    const before = Date.now()
    const opened = await first.get().expect(200).expect('x-ratelimit-remaining', '2')
    // The window's end is a minute after this key's first request (not a clock-aligned edge).
    const reset = Number(opened.headers['x-ratelimit-reset'])
    expect(reset).toBeGreaterThanOrEqual(Math.ceil((before + 60_000) / 1000))
    expect(reset).toBeLessThanOrEqual(Math.ceil((Date.now() + 60_000) / 1000))
    await second.get().expect(200).expect('x-ratelimit-remaining', '1')
    await first.get().expect(200).expect('x-ratelimit-remaining', '0')
    await second.get().expect(429, 'Too many requests, please try again later.')
  } finally {
    client.disconnect()
    await redis.stop()
  }
})
