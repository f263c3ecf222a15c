/**
 * Owns DESIGN.md's examples of the meters and of cost, on the store under test.
 */
import type { ConformanceContext } from './context'

export function registerDesignMeterCases(ctx: ConformanceContext): void {
  const { limiterAt, burst, supported } = ctx
  if (supported.includes('token-bucket')) {
    test('DESIGN token-bucket: four at once, the fifth waits exactly 15000 ms', async () => {
      const { limiter, clock, key } = limiterAt(5_000_000, {
        algorithm: 'token-bucket',
        limit: 4,
        window: 60_000,
      })
      expect((await burst(limiter, key, 4)).every((d) => d.allowed)).toBe(true)
      const fifth = await limiter.consume(key)
      expect(fifth.allowed).toBe(false)
      expect(fifth.retryAfterMs).toBe(15_000)
      clock.now += 14_999
      expect((await limiter.consume(key)).allowed).toBe(false)
      clock.now += 1
      expect((await limiter.consume(key)).allowed).toBe(true)
      expect((await limiter.consume(key)).allowed).toBe(false)
    })
  }

  if (supported.includes('gcra')) {
    test('DESIGN gcra: six at once, the seventh waits 10 ms', async () => {
      const { limiter, clock, key } = limiterAt(777, {
        algorithm: 'gcra',
        limit: 100,
        window: 1000,
        burst: 6,
      })
      expect((await burst(limiter, key, 6)).every((d) => d.allowed)).toBe(true)
      const seventh = await limiter.consume(key)
      expect(seventh.allowed).toBe(false)
      expect(seventh.retryAfterMs).toBe(10)
      clock.now += 10
      expect((await limiter.consume(key)).allowed).toBe(true)
      expect((await limiter.consume(key)).allowed).toBe(false)
    })
  }

  if (supported.includes('leaky-bucket')) {
    test('DESIGN leaky-bucket: delays 0, 500, 1000, then the full queue waits 500', async () => {
      const { limiter, key } = limiterAt(1_000_000, {
        algorithm: 'leaky-bucket',
        limit: 2,
        window: 1000,
        burst: 3,
      })
      const decisions = await burst(limiter, key, 4)
      expect(decisions.slice(0, 3).map((d) => [d.allowed, d.delayMs])).toEqual([
        [true, 0],
        [true, 500],
        [true, 1000],
      ])
      expect(decisions[3].allowed).toBe(false)
      expect(decisions[3].retryAfterMs).toBe(500)
    })
  }

  for (const algorithm of supported) {
    test(`DESIGN cost (${algorithm}): 4 + 4 pass, a third 4 is rejected with remaining 2, then 2 passes`, async () => {
      const { limiter, key } = limiterAt(100_000, { algorithm, limit: 10, window: 60_000 })
      const [a, b, c] = await burst(limiter, key, 3, 4)
      expect([a.allowed, b.allowed, c.allowed]).toEqual([true, true, false])
      expect(c.remaining).toBe(2)
      const d = await limiter.consume(key, { cost: 2 })
      expect(d.allowed).toBe(true)
      expect(d.remaining).toBe(0)
    })
  }
}
