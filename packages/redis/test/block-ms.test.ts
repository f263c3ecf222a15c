/**
 * limiter.block with an `ms` of no whole number, and one that ends past 2^53, on a clock with a
 * fraction of a ms (expectWholeMsBlocks in the test kit), on Redis's clock and the client's.
 */
import { RedisStore } from '@sluice/redis'
import { expectWholeMsBlocks } from '@sluice/testkit'
import { useRedisServer } from './fixtures/redis-server'

const redis = useRedisServer()

test.each(['client', 'server'] as const)(
  'a block of 2500.5 ms and one of 1e308 ms, on %s time',
  async (time) => {
    await expectWholeMsBlocks(
      new RedisStore({ client: redis.connect(), time, blockCache: false }),
      time,
    )
  },
)
