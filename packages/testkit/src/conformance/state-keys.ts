/**
 * Owns the cases of per-policy state keys (rules) in one all-or-nothing call.
 */
import { resolvePolicy } from '@sluice/core/adapter'
import type { ConformanceContext } from './context'

export function registerStateKeyCases(ctx: ConformanceContext): void {
  const { freshKey, supported, multiple, penalties, stateKeys } = ctx
  // ---- Per-policy state keys (rules) ------------------------------------------------------

  if (stateKeys && multiple && supported.length > 0) {
    const algorithm = supported.includes('sliding-window') ? 'sliding-window' : supported[0]

    test(`keys: two rules with different state keys in one all-or-nothing call (${algorithm})`, async () => {
      const group = freshKey()
      const now = 5_000_000
      const rules = [
        resolvePolicy({ algorithm, limit: 2, window: 600_000, name: 'route' }),
        resolvePolicy({ algorithm, limit: 5, window: 600_000, name: 'user' }),
      ]
      const a = ['route:/a', 'user:1']
      const b = ['route:/b', 'user:1']
      for (let i = 0; i < 2; i++) {
        const { outcomes } = await ctx.store.consume({
          key: group,
          keys: a,
          policies: rules,
          cost: 1,
          now,
        })
        expect(outcomes.map((o) => o.allowed)).toEqual([true, true])
      }
      const third = await ctx.store.consume({ key: group, keys: a, policies: rules, cost: 1, now })
      expect(third.outcomes.map((o) => o.allowed)).toEqual([false, true])
      // The user rule did not count the rejected request, and /b shares the user's state only.
      const other = await ctx.store.consume({ key: group, keys: b, policies: rules, cost: 1, now })
      expect(other.outcomes.map((o) => [o.allowed, o.remaining])).toEqual([
        [true, 1],
        [true, 2],
      ])
      // The group key without `keys` is another state.
      const bare = await ctx.store.peek({ key: group, policies: rules.slice(0, 1), cost: 0, now })
      expect(bare.outcomes[0].remaining).toBe(2)
      // Same policy (same id) under two state keys: two states.
      const same = [
        resolvePolicy({ algorithm, limit: 1, window: 600_000, name: 'x' }),
        resolvePolicy({ algorithm, limit: 1, window: 600_000, name: 'y' }),
      ]
      const twice = await ctx.store.consume({
        key: group,
        keys: ['x', 'y'],
        policies: same,
        cost: 1,
        now,
      })
      expect(twice.outcomes.map((o) => o.allowed)).toEqual([true, true])
      // A block on the group refuses every state key of it; reset with keys forgets them.
      await ctx.store.block({ key: group, until: now + 1000, now })
      const blocked = await ctx.store.consume({
        key: group,
        keys: b,
        policies: rules,
        cost: 1,
        now,
      })
      expect(blocked.outcomes.map((o) => o.retryAfterMs)).toEqual([1000, 1000])
      await ctx.store.reset(group, rules, a)
      const fresh = await ctx.store.peek({ key: group, keys: a, policies: rules, cost: 0, now })
      expect(fresh.outcomes.map((o) => o.remaining)).toEqual([2, 5])
      const kept = await ctx.store.peek({ key: group, keys: b, policies: rules, cost: 0, now })
      expect(kept.outcomes.map((o) => o.remaining)).toEqual([1, 5])
      // penalize and reward follow the state keys too.
      if (penalties) {
        await ctx.store.penalize({ key: group, keys: b, policies: rules, cost: 1, now })
        const p = await ctx.store.peek({ key: group, keys: b, policies: rules, cost: 0, now })
        expect(p.outcomes.map((o) => o.remaining)).toEqual([0, 4])
        await ctx.store.refund({ key: group, keys: b, policies: rules, cost: 5, now })
        const r = await ctx.store.peek({ key: group, keys: b, policies: rules, cost: 0, now })
        expect(r.outcomes.map((o) => o.remaining)).toEqual([2, 5])
      }
    })
  }
}
