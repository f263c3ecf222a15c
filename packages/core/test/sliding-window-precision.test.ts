/**
 * A sliding window of many buckets: a refusal's wait is found in one pass over them. Summed
 * anew for each bucket, the wait of a day in 345,600 buckets took 1.2 x 10^11 steps (the event
 * loop held for minutes; 125 ms at 8,000 buckets), so this test ends in jest's timeout then.
 */
import { createLimiter, MemoryStore } from '@sluice/core'

test('a day in 345,600 buckets: the refusal says when the oldest requests fade, at once', async () => {
  const start = 86_400_000 * 20_000 // a bucket's start
  const limiter = createLimiter({
    store: new MemoryStore(),
    algorithm: 'sliding-window',
    limit: 5,
    window: '1d',
    precision: 345_600,
    clock: () => start,
  })
  for (let i = 0; i < 5; i++) expect((await limiter.consume('k')).allowed).toBe(true)
  const refused = await limiter.consume('k')
  // The five fade from the estimate as their bucket leaves the window: 5 x (250 - 1) / 250
  // rounds down to 4 one ms into it (of 250), a day after they came.
  expect([refused.allowed, refused.retryAfterMs]).toEqual([false, 86_400_001])
})
