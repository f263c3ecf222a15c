/**
 * Owns the cases of a key's block: kept apart from the counters, replaced, lifted.
 */
import type { ConformanceContext } from './context'
import { plain } from './model'

export function registerBlockCases(ctx: ConformanceContext): void {
  const { freshKey, policiesOf, supported, multiple, blocks } = ctx
  // ---- Operations on keys: block, penalize, reward ---------------------------------------

  if (blocks && supported.length > 0) {
    const algorithm = supported.includes('fixed-window') ? 'fixed-window' : supported[0]
    const policies = policiesOf({ algorithm, limit: 3, window: 600_000 })

    test(`block: rejects with retryAfterMs = until - now, counters untouched (${algorithm})`, async () => {
      const key = freshKey()
      const now = 3_000_000
      await ctx.store.consume({ key, policies, cost: 1, now })
      await ctx.store.block({ key, until: now + 5000, now })
      for (const op of ['consume', 'peek'] as const) {
        const { outcomes } = await ctx.store[op]({ key, policies, cost: 1, now: now + 1000 })
        expect(plain(outcomes)).toEqual([
          { allowed: false, remaining: 0, resetMs: 4000, retryAfterMs: 4000, delayMs: 0 },
        ])
      }
      // Cost 0 (how much is left) is refused the same way while the block holds.
      const look = await ctx.store.peek({ key, policies, cost: 0, now: now + 2000 })
      expect(look.outcomes[0]).toMatchObject({ allowed: false, retryAfterMs: 3000 })
      // Lifted by time; the counters saw only the first request.
      const after = await ctx.store.consume({ key, policies, cost: 1, now: now + 5000 })
      expect(after.outcomes[0]).toMatchObject({ allowed: true, remaining: 1 })
    })

    test('block: a later block replaces an earlier one, until <= now lifts it, reset lifts it', async () => {
      const key = freshKey()
      const now = 3_000_000
      await ctx.store.block({ key, until: now + 9000, now })
      await ctx.store.block({ key, until: now + 2000, now })
      let { outcomes } = await ctx.store.consume({ key, policies, cost: 1, now: now + 500 })
      expect(outcomes[0]).toMatchObject({ allowed: false, retryAfterMs: 1500 })
      await ctx.store.block({ key, until: now + 60_000, now: now + 500 })
      ;({ outcomes } = await ctx.store.consume({ key, policies, cost: 1, now: now + 1000 }))
      expect(outcomes[0]).toMatchObject({ allowed: false, retryAfterMs: 59_000 })
      await ctx.store.block({ key, until: now + 1000, now: now + 1000 })
      ;({ outcomes } = await ctx.store.consume({ key, policies, cost: 1, now: now + 1000 }))
      expect(outcomes[0]).toMatchObject({ allowed: true, remaining: 2 })
      await ctx.store.block({ key, until: now + 60_000, now: now + 1000 })
      await ctx.store.reset(key, policies)
      ;({ outcomes } = await ctx.store.consume({ key, policies, cost: 1, now: now + 1000 }))
      expect(outcomes[0]).toMatchObject({ allowed: true, remaining: 2 })
    })

    test('block: over the limit, then blocked, then lifted (no stale answer in between)', async () => {
      const key = freshKey()
      const now = 3_000_000
      const tight = policiesOf({ algorithm, limit: 1, window: 600_000 })
      await ctx.store.consume({ key, policies: tight, cost: 1, now })
      const over = await ctx.store.consume({ key, policies: tight, cost: 1, now })
      expect(over.outcomes[0].allowed).toBe(false)
      const counted = over.outcomes[0].retryAfterMs
      await ctx.store.block({ key, until: now + counted + 50_000, now })
      let { outcomes } = await ctx.store.consume({ key, policies: tight, cost: 1, now })
      expect(outcomes[0]).toMatchObject({ allowed: false, retryAfterMs: counted + 50_000 })
      await ctx.store.block({ key, until: now, now })
      ;({ outcomes } = await ctx.store.consume({ key, policies: tight, cost: 1, now }))
      expect(outcomes[0]).toMatchObject({ allowed: false, retryAfterMs: counted })
    })

    if (multiple) {
      test('block: every policy of the key answers blocked', async () => {
        const key = freshKey()
        const now = 3_000_000
        const two = policiesOf(
          { algorithm, limit: 3, window: 600_000 },
          { algorithm, limit: 9, window: 60_000 },
        )
        await ctx.store.block({ key, until: now + 700, now })
        const { outcomes } = await ctx.store.consume({ key, policies: two, cost: 1, now })
        expect(outcomes.map((o) => [o.allowed, o.retryAfterMs, o.remaining])).toEqual([
          [false, 700, 0],
          [false, 700, 0],
        ])
        const free = await ctx.store.consume({ key, policies: two, cost: 1, now: now + 700 })
        expect(free.outcomes.map((o) => o.remaining)).toEqual([2, 8])
      })
    }
  }
}
