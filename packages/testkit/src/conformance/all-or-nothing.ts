/**
 * Owns the cases of several limits on one key: decided together, all-or-nothing.
 */
import type { ConformanceContext } from './context'

export function registerAllOrNothingCases(ctx: ConformanceContext): void {
  const { freshKey, policiesOf, supported, multiple } = ctx
  // ---- Several limits on one key: all-or-nothing -----------------------------------------

  if (multiple) {
    for (const algorithm of supported) {
      test(`several limits are all-or-nothing (${algorithm})`, async () => {
        const key = freshKey()
        const now = 2_000_000
        const tight = policiesOf(
          { algorithm, limit: 2, window: 1000 },
          { algorithm, limit: 5, window: 60_000 },
        )
        for (let i = 0; i < 2; i++) {
          expect(
            (await ctx.store.consume({ key, policies: tight, cost: 1, now })).outcomes,
          ).toEqual([
            expect.objectContaining({ allowed: true }),
            expect.objectContaining({ allowed: true }),
          ])
        }
        const third = await ctx.store.consume({ key, policies: tight, cost: 1, now })
        expect(third.outcomes.map((o) => o.allowed)).toEqual([false, true])
        // The hourly-style limit admitted it but must not have counted it.
        const look = await ctx.store.peek({ key, policies: tight, cost: 0, now })
        expect(look.outcomes[1].remaining).toBe(3)

        const other = freshKey()
        const loose = policiesOf(
          { algorithm, limit: 5, window: 1000 },
          { algorithm, limit: 2, window: 60_000 },
        )
        await ctx.store.consume({ key: other, policies: loose, cost: 2, now })
        const rejected = await ctx.store.consume({ key: other, policies: loose, cost: 1, now })
        expect(rejected.outcomes.map((o) => o.allowed)).toEqual([true, false])
        const after = await ctx.store.peek({ key: other, policies: loose, cost: 0, now })
        expect(after.outcomes[0].remaining).toBe(3)
      })
    }
    for (const algorithm of supported) {
      test(`two limits with one id share one state: each takes the cost (${algorithm})`, async () => {
        const key = freshKey()
        const now = 3_000_000
        const twins = policiesOf(
          { algorithm, limit: 4, window: 60_000 },
          { algorithm, limit: 4, window: 60_000 },
        )
        expect(twins[0].id).toBe(twins[1].id)
        const allowed = async (): Promise<boolean[]> =>
          (await ctx.store.consume({ key, policies: twins, cost: 1, now })).outcomes.map(
            (o) => o.allowed,
          )
        expect(await allowed()).toEqual([true, true])
        const look = await ctx.store.peek({ key, policies: twins, cost: 0, now })
        expect(look.outcomes.map((o) => o.remaining)).toEqual([2, 2])
        expect(await allowed()).toEqual([true, true])
        expect(await allowed()).toEqual([false, false])
      })
    }
  }
}
