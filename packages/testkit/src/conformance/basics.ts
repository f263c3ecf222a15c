/**
 * Owns the first conformance cases: whole-ms times, and DESIGN.md's examples of the window algorithms.
 */
import type { ConformanceContext } from './context'

export function registerDesignWindowCases(ctx: ConformanceContext): void {
  const { limiterAt, burst, supported } = ctx
  test('every time a decision reports is a whole number of ms', async () => {
    const odd = { limit: 7, window: 1300 }
    for (const algorithm of supported) {
      const { limiter, clock, key } = limiterAt(1_700_000_000_123, { algorithm, ...odd })
      const seen: number[] = []
      for (let i = 0; i < 40; i++) {
        clock.now += (i * 37) % 211
        const d = await limiter.consume(key, { cost: 1 + (i % 3) })
        seen.push(d.resetMs, d.delayMs)
        if (Number.isFinite(d.retryAfterMs)) seen.push(d.retryAfterMs)
      }
      expect({ algorithm, fractions: seen.filter((ms) => !Number.isInteger(ms)) }).toEqual({
        algorithm,
        fractions: [],
      })
    }
  })

  // ---- DESIGN.md, "Semantics, by example" -------------------------------------------------

  if (supported.includes('fixed-window')) {
    test('DESIGN fixed-window: aligned windows, retry at the next window, the edge burst', async () => {
      const { limiter, clock, key } = limiterAt(10_500, {
        algorithm: 'fixed-window',
        limit: 3,
        window: 1000,
      })
      const decisions = await burst(limiter, key, 4)
      expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false])
      expect(decisions[3].retryAfterMs).toBe(500)
      clock.now = 11_000
      expect((await limiter.consume(key)).allowed).toBe(true)

      const edge = limiterAt(10_999, { algorithm: 'fixed-window', limit: 3, window: 1000 })
      expect((await burst(edge.limiter, edge.key, 3)).every((d) => d.allowed)).toBe(true)
      edge.clock.now = 11_000
      expect((await burst(edge.limiter, edge.key, 3)).every((d) => d.allowed)).toBe(true)
    })
  }

  if (supported.includes('sliding-log')) {
    test('DESIGN sliding-log: exact window, rejected requests not logged', async () => {
      const { limiter, clock, key } = limiterAt(1000, {
        algorithm: 'sliding-log',
        limit: 2,
        window: 60_000,
      })
      expect((await limiter.consume(key)).allowed).toBe(true)
      clock.now = 30_000
      expect((await limiter.consume(key)).allowed).toBe(true)
      clock.now = 50_000
      expect((await limiter.consume(key)).allowed).toBe(false)
      clock.now = 60_500
      const stillFull = await limiter.consume(key)
      expect(stillFull.allowed).toBe(false)
      expect(stillFull.retryAfterMs).toBe(500)
      clock.now = 61_500
      expect((await limiter.consume(key)).allowed).toBe(true)
    })
  }

  if (supported.includes('sliding-window')) {
    test('DESIGN sliding-window: 3 + 5 x 0.7 = 6.5 passes, the next (7.5) is rejected', async () => {
      const { limiter, clock, key } = limiterAt(60_000 * 10 + 1000, {
        algorithm: 'sliding-window',
        limit: 7,
        window: 60_000,
      })
      await burst(limiter, key, 5)
      clock.now = 60_000 * 11 + 1000
      expect((await burst(limiter, key, 3)).every((d) => d.allowed)).toBe(true)
      clock.now = 60_000 * 11 + 18_000
      const seventh = await limiter.consume(key)
      expect(seventh.allowed).toBe(true)
      expect(seventh.remaining).toBe(0)
      expect((await limiter.consume(key)).allowed).toBe(false)
    })
  }
}
