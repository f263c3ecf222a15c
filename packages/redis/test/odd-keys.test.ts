/**
 * Client keys that differ only in lone halves of UTF-16 pairs keep states of their own on Redis,
 * plain and packed, as on MemoryStore (UTF-8 would turn each half into U+FFFD).
 */
import { createLimiter, MemoryStore } from '@sluice/core'
import { RedisStore } from '@sluice/redis'
import { firstOfEachAdmitted, LONE_SURROGATE_KEYS } from '@sluice/testkit'
import { useRedisServer } from './fixtures/redis-server'

const redis = useRedisServer()

test.each([
  ['memory', () => new MemoryStore()],
  ['Redis', () => new RedisStore({ client: redis.connect(), prefix: 'odd1' })],
  [
    'Redis, packed in one group',
    () => new RedisStore({ client: redis.connect(), prefix: 'odd2', packed: { groups: 1 } }),
  ],
  [
    'Redis, one call each',
    () => new RedisStore({ client: redis.connect(), prefix: 'odd3', batchSize: 1 }),
  ],
])('%s: the first request of each key is admitted', async (_name, store) => {
  const limiter = createLimiter({ limit: 1, window: '1h', store: store() })
  expect(await firstOfEachAdmitted(limiter)).toEqual(LONE_SURROGATE_KEYS.map(() => true))
  expect((await limiter.consume('\uD800')).allowed).toBe(false)
})
