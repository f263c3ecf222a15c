/**
 * limiter.block with an `ms` of no whole number, and one that ends past 2^53, on a clock with a
 * fraction of a ms: the store keeps whole ms, and the calls batched beside the block are
 * decided as usual.
 */
import { createLimiter } from '@sluice/core'
import { RedisStore } from '@sluice/redis'
import { useRedisServer } from './fixtures/redis-server'

const redis = useRedisServer()

test.each(['client', 'server'] as const)(
  'a block of 2500.5 ms and one of 1e308 ms, on %s time',
  async (time) => {
    const limiter = createLimiter({
      store: new RedisStore({ client: redis.connect(), time, blockCache: false }),
      limit: 5,
      window: '1h',
      clock: () => 1_795_000_000_000.5,
    })
    const key = `fraction:${time}:${Date.now()}`
    const [, , admitted] = await Promise.all([
      limiter.block(key, 2500.5),
      limiter.block(`${key}:forever`, 1e308),
      limiter.consume(`${key}:other`),
    ])
    expect(admitted).toMatchObject({ allowed: true, degraded: false, remaining: 4 })
    const blocked = await limiter.consume(key)
    expect(blocked).toMatchObject({ allowed: false, degraded: false })
    // Rounded up to 2501 on the limiter's clock; on Redis's, a few ms may have passed since.
    expect(blocked.retryAfterMs).toBeGreaterThan(2400)
    expect(blocked.retryAfterMs).toBeLessThanOrEqual(2501)
    expect(await limiter.consume(`${key}:forever`)).toMatchObject({
      allowed: false,
      degraded: false,
    })
  },
)
