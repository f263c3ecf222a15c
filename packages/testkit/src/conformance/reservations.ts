/**
 * Owns the cases of reservations (maxDelayMs, limiter.wait) on the meters.
 */
import type { ConformanceContext } from './context'

export function registerReservationCases(ctx: ConformanceContext): void {
  const { freshKey, policiesOf, reservations, meters, windowed } = ctx
  // ---- Reservations (limiter.wait) --------------------------------------------------------

  if (reservations) {
    for (const algorithm of meters) {
      test(`maxDelayMs: reservations at the policy's pace, none early; beyond it nothing is written (${algorithm})`, async () => {
        const key = freshKey()
        const now = 6_000_000
        // 10 a second (one every 100 ms), room for 2 at once.
        const policies = policiesOf({ algorithm, limit: 10, window: 1000, burst: 2 })
        const delays: number[] = []
        for (let i = 0; i < 20; i++) {
          const { outcomes } = await ctx.store.consume({
            key,
            policies,
            cost: 1,
            now,
            maxDelayMs: 1000,
          })
          if (!outcomes[0].allowed) break
          delays.push(outcomes[0].delayMs)
        }
        // token-bucket and gcra: two fit now, then one each 100 ms, up to 1000 ms ahead.
        // leaky-bucket shapes every request, 100 ms apart from the first, up to 1000 ms.
        expect(delays).toEqual(
          algorithm === 'leaky-bucket'
            ? [0, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000]
            : [0, 0, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000],
        )
        // The one beyond maxDelayMs was rejected and wrote nothing.
        const before = await ctx.store.peek({ key, policies, cost: 0, now })
        const beyond = await ctx.store.consume({ key, policies, cost: 1, now, maxDelayMs: 1000 })
        expect(beyond.outcomes[0]).toMatchObject({
          allowed: false,
          retryAfterMs: 100,
          delayMs: 0,
        })
        expect(await ctx.store.peek({ key, policies, cost: 0, now })).toEqual(before)
        // Giving one reservation back (an aborted wait) frees exactly that slot.
        await ctx.store.refund({ key, policies, cost: 1, now, at: now })
        const back = await ctx.store.consume({ key, policies, cost: 1, now, maxDelayMs: 1000 })
        expect(back.outcomes[0]).toMatchObject({ allowed: true, delayMs: 1000 })
        // Without maxDelayMs nothing passes now.
        const plainNow = await ctx.store.consume({ key, policies, cost: 1, now })
        expect(plainNow.outcomes[0].allowed).toBe(false)
        // 300 ms later the queue has moved on by 3: a reservation waits 800.
        const later = await ctx.store.consume({
          key,
          policies,
          cost: 1,
          now: now + 300,
          maxDelayMs: 1000,
        })
        expect(later.outcomes[0]).toMatchObject({ allowed: true, delayMs: 800 })
      })
    }

    for (const algorithm of windowed) {
      test(`maxDelayMs is ignored by ${algorithm} (no reservations on counters)`, async () => {
        const key = freshKey()
        const now = 6_000_000
        const policies = policiesOf({ algorithm, limit: 1, window: 1000 })
        await ctx.store.consume({ key, policies, cost: 1, now })
        const { outcomes } = await ctx.store.consume({
          key,
          policies,
          cost: 1,
          now,
          maxDelayMs: 60_000,
        })
        expect(outcomes[0]).toMatchObject({ allowed: false, delayMs: 0 })
      })
    }
  }
}
