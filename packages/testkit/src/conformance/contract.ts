/**
 * Owns the contract cases every algorithm passes: capacity, rejected requests, peek, reset, refund.
 */
import type { ConformanceContext } from './context'

export function registerContractCases(ctx: ConformanceContext): void {
  const { freshKey, policiesOf, supported, refunds, meters, windowed } = ctx
  // ---- Contract cases, for every algorithm ------------------------------------------------

  for (const algorithm of supported) {
    describe(algorithm, () => {
      const now = 1_000_000

      test('a cost above the capacity is rejected forever and writes nothing', async () => {
        const key = freshKey()
        const policies = policiesOf({ algorithm, limit: 3, window: 60_000 })
        await ctx.store.consume({ key, policies, cost: 1, now })
        const { outcomes } = await ctx.store.consume({ key, policies, cost: 4, now })
        expect(outcomes[0].allowed).toBe(false)
        expect(outcomes[0].retryAfterMs).toBe(Infinity)
        const after = await ctx.store.peek({ key, policies, cost: 0, now })
        expect(after.outcomes[0].remaining).toBe(2)
      })

      test('a rejected request writes nothing', async () => {
        const key = freshKey()
        const policies = policiesOf({ algorithm, limit: 2, window: 60_000 })
        await ctx.store.consume({ key, policies, cost: 2, now })
        const before = await ctx.store.peek({ key, policies, cost: 1, now: now + 1 })
        for (let i = 0; i < 3; i++) {
          const rejected = await ctx.store.consume({ key, policies, cost: 1, now: now + 1 })
          expect(rejected.outcomes[0].allowed).toBe(false)
        }
        expect(await ctx.store.peek({ key, policies, cost: 1, now: now + 1 })).toEqual(before)
      })

      test('peek changes nothing', async () => {
        const looked = freshKey()
        const fresh = freshKey()
        const policies = policiesOf({ algorithm, limit: 3, window: 60_000 })
        for (let cost = 0; cost < 5; cost++) {
          const { outcomes } = await ctx.store.peek({ key: looked, policies, cost, now })
          expect(outcomes[0].allowed).toBe(cost <= 3)
        }
        for (let i = 0; i < 4; i++) {
          const a = await ctx.store.consume({ key: looked, policies, cost: 1, now })
          const b = await ctx.store.consume({ key: fresh, policies, cost: 1, now })
          expect(a).toEqual(b)
        }
      })

      test('reset forgets the key', async () => {
        const key = freshKey()
        const policies = policiesOf({ algorithm, limit: 2, window: 60_000 })
        await ctx.store.consume({ key, policies, cost: 2, now })
        expect((await ctx.store.consume({ key, policies, cost: 1, now })).outcomes[0].allowed).toBe(
          false,
        )
        await ctx.store.reset(key, policies)
        const { outcomes } = await ctx.store.consume({ key, policies, cost: 1, now })
        expect(outcomes[0]).toMatchObject({ allowed: true, remaining: 1 })
      })

      if (refunds) {
        test('refund gives back what consume took', async () => {
          const key = freshKey()
          const policies = policiesOf({ algorithm, limit: 3, window: 60_000 })
          await ctx.store.consume({ key, policies, cost: 3, now })
          expect(
            (await ctx.store.consume({ key, policies, cost: 1, now: now + 1 })).outcomes[0].allowed,
          ).toBe(false)
          await ctx.store.refund({ key, policies, cost: 1, now: now + 1, at: now })
          expect(
            (await ctx.store.consume({ key, policies, cost: 1, now: now + 1 })).outcomes[0].allowed,
          ).toBe(true)
          expect(
            (await ctx.store.consume({ key, policies, cost: 1, now: now + 1 })).outcomes[0].allowed,
          ).toBe(false)
        })
      }
    })
  }

  if (refunds) {
    for (const algorithm of windowed) {
      test(`refund does not reach into a window that has reset (${algorithm})`, async () => {
        const key = freshKey()
        const policies = policiesOf({ algorithm, limit: 3, window: 1000 })
        await ctx.store.consume({ key, policies, cost: 3, now: 10_500 })
        const { outcomes } = await ctx.store.consume({ key, policies, cost: 3, now: 12_500 })
        expect(outcomes[0].allowed).toBe(true)
        await ctx.store.refund({ key, policies, cost: 3, now: 12_500, at: 10_500 })
        const after = await ctx.store.consume({ key, policies, cost: 1, now: 12_500 })
        expect(after.outcomes[0].allowed).toBe(false)
      })
    }
    for (const algorithm of meters) {
      test(`refund never goes below empty (${algorithm})`, async () => {
        const key = freshKey()
        const policies = policiesOf({ algorithm, limit: 3, window: 60_000 })
        await ctx.store.consume({ key, policies, cost: 1, now: 5000 })
        await ctx.store.refund({ key, policies, cost: 3, now: 5000, at: 5000 })
        const { outcomes } = await ctx.store.peek({ key, policies, cost: 0, now: 5000 })
        expect(outcomes[0].remaining).toBe(3)
      })
    }
  }
}
