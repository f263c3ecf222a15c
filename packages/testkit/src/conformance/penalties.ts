/**
 * Owns the cases of penalize and reward: never beyond full, never below empty.
 */
import type { ConformanceContext } from './context'

export function registerPenaltyCases(ctx: ConformanceContext): void {
  const { freshKey, policiesOf, burstOn, supported, penalties } = ctx
  if (penalties) {
    for (const algorithm of supported) {
      test(`penalize never goes beyond full, reward never below empty (${algorithm})`, async () => {
        const key = freshKey()
        const now = 4_000_000
        const policies = policiesOf({ algorithm, limit: 3, window: 600_000 })
        await ctx.store.consume({ key, policies, cost: 1, now })
        await ctx.store.penalize({ key, policies, cost: 1, now })
        let look = await ctx.store.peek({ key, policies, cost: 0, now })
        expect(look.outcomes[0].remaining).toBe(1)
        await ctx.store.penalize({ key, policies, cost: 100, now })
        look = await ctx.store.peek({ key, policies, cost: 0, now })
        expect(look.outcomes[0].remaining).toBe(0)
        // Full, not beyond: one unit given back is one request.
        await ctx.store.refund({ key, policies, cost: 1, now })
        expect((await ctx.store.consume({ key, policies, cost: 1, now })).outcomes[0].allowed).toBe(
          true,
        )
        expect((await ctx.store.consume({ key, policies, cost: 1, now })).outcomes[0].allowed).toBe(
          false,
        )
        // A reward larger than the usage leaves the key empty, not in credit.
        await ctx.store.refund({ key, policies, cost: 100, now })
        look = await ctx.store.peek({ key, policies, cost: 0, now })
        expect(look.outcomes[0].remaining).toBe(3)
        const again = await burstOn(key, policies, 4, now)
        expect(again).toEqual([true, true, true, false])
        // A penalty on a key never seen fills it.
        const fresh = freshKey()
        await ctx.store.penalize({ key: fresh, policies, cost: 7, now })
        expect(
          (await ctx.store.peek({ key: fresh, policies, cost: 1, now })).outcomes[0].allowed,
        ).toBe(false)
      })
    }

    for (const algorithm of ctx.meters) {
      // At time 0 a meter's state can be [0 ms, remainder]: not empty, so a store keeps it.
      test(`a penalty at time 0 holds the next request back (${algorithm})`, async () => {
        const key = freshKey()
        const policies = policiesOf({ algorithm, limit: 5, window: 4, burst: 1 })
        await ctx.store.penalize({ key, policies, cost: 1, now: 0 })
        const next = await ctx.store.consume({ key, policies, cost: 1, now: 0 })
        expect(next.outcomes[0].allowed).toBe(false)
      })
    }

    if (supported.includes('sliding-log')) {
      test('reward on sliding-log takes the newest timestamps first', async () => {
        const key = freshKey()
        const policies = policiesOf({ algorithm: 'sliding-log', limit: 3, window: 10_000 })
        await ctx.store.consume({ key, policies, cost: 1, now: 100_000 })
        await ctx.store.consume({ key, policies, cost: 2, now: 105_000 })
        await ctx.store.refund({ key, policies, cost: 2, now: 106_000 })
        // Left: the one at 100000, so the key frees up at 110000, not 115000.
        const look = await ctx.store.peek({ key, policies, cost: 0, now: 106_000 })
        expect(look.outcomes[0]).toMatchObject({ remaining: 2, resetMs: 4000 })
      })
    }
  }
}
