/**
 * Owns the case of blocks in no whole number of ms on a shared store: a block of 2500.5 ms and
 * one of 1e308 ms (past 2^53, a block for good) on a clock with a fraction of a ms, in one turn
 * with a consume of another key. The store keeps whole ms, and the call batched beside the
 * blocks is decided as usual.
 */
import { createLimiter, type Store } from '@sluice/core'

export async function expectWholeMsBlocks(store: Store, label: string): Promise<void> {
  const limiter = createLimiter({
    store,
    limit: 5,
    window: '1h',
    clock: () => 1_795_000_000_000.5,
  })
  const key = `fraction:${label}:${Date.now()}`
  const [, , admitted] = await Promise.all([
    limiter.block(key, 2500.5),
    limiter.block(`${key}:forever`, 1e308),
    limiter.consume(`${key}:other`),
  ])
  expect(admitted).toMatchObject({ allowed: true, degraded: false, remaining: 4 })
  const blocked = await limiter.consume(key)
  expect(blocked).toMatchObject({ allowed: false, degraded: false })
  // 2501 on the limiter's clock; on the store's own, a few ms may have passed since.
  expect(blocked.retryAfterMs).toBeGreaterThan(2400)
  expect(blocked.retryAfterMs).toBeLessThanOrEqual(2501)
  expect(await limiter.consume(`${key}:forever`)).toMatchObject({
    allowed: false,
    degraded: false,
  })
}
