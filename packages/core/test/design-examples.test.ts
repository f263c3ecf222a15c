import { ALGORITHMS } from '@sluice/core'
import { burst, limiterAt } from './helpers'

// Each case is one line of DESIGN.md, "Semantics, by example".
describe('DESIGN.md semantics, by example', () => {
  test('fixed-window: aligned windows, retry at the next window, and the edge burst', async () => {
    const { limiter, clock } = limiterAt(10_500, {
      algorithm: 'fixed-window',
      limit: 3,
      window: 1000,
    })
    const decisions = await burst(limiter, 'k', 4)
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false])
    expect(decisions[3].retryAfterMs).toBe(500)
    clock.now = 11_000
    expect((await limiter.consume('k')).allowed).toBe(true)

    const edge = limiterAt(10_999, { algorithm: 'fixed-window', limit: 3, window: 1000 })
    expect((await burst(edge.limiter, 'e', 3)).every((d) => d.allowed)).toBe(true)
    edge.clock.now = 11_000
    expect((await burst(edge.limiter, 'e', 3)).every((d) => d.allowed)).toBe(true)
  })

  test('sliding-log: exact window, rejected requests not logged', async () => {
    const { limiter, clock } = limiterAt(1000, {
      algorithm: 'sliding-log',
      limit: 2,
      window: 60_000,
    })
    expect((await limiter.consume('k')).allowed).toBe(true)
    clock.now = 30_000
    expect((await limiter.consume('k')).allowed).toBe(true)
    clock.now = 50_000
    expect((await limiter.consume('k')).allowed).toBe(false)
    clock.now = 60_500
    const stillFull = await limiter.consume('k')
    expect(stillFull.allowed).toBe(false)
    expect(stillFull.retryAfterMs).toBe(500)
    clock.now = 61_500
    expect((await limiter.consume('k')).allowed).toBe(true)
  })

  test('sliding-window: 3 + 5 x 0.7 = 6.5 passes, the next (7.5) is rejected', async () => {
    const { limiter, clock } = limiterAt(0, {
      algorithm: 'sliding-window',
      limit: 7,
      window: 60_000,
    })
    clock.now = 60_000 * 10 + 1000
    await burst(limiter, 'k', 5)
    clock.now = 60_000 * 11 + 1000
    expect((await burst(limiter, 'k', 3)).every((d) => d.allowed)).toBe(true)
    clock.now = 60_000 * 11 + 18_000 // 30% into the current window
    const seventh = await limiter.consume('k')
    expect(seventh.allowed).toBe(true)
    expect(seventh.remaining).toBe(0)
    const eighth = await limiter.consume('k')
    expect(eighth.allowed).toBe(false)
  })

  test('token-bucket: four at once, the fifth waits exactly 15000 ms', async () => {
    const { limiter, clock } = limiterAt(5_000_000, {
      algorithm: 'token-bucket',
      limit: 4,
      window: 60_000,
    })
    expect((await burst(limiter, 'k', 4)).every((d) => d.allowed)).toBe(true)
    const fifth = await limiter.consume('k')
    expect(fifth.allowed).toBe(false)
    expect(fifth.retryAfterMs).toBe(15_000)
    clock.now += 14_999
    expect((await limiter.consume('k')).allowed).toBe(false)
    clock.now += 1
    expect((await limiter.consume('k')).allowed).toBe(true)
    expect((await limiter.consume('k')).allowed).toBe(false)
  })

  test('gcra: six at once, the seventh waits 10 ms', async () => {
    const { limiter, clock } = limiterAt(777, {
      algorithm: 'gcra',
      limit: 100,
      window: 1000,
      burst: 6,
    })
    expect((await burst(limiter, 'k', 6)).every((d) => d.allowed)).toBe(true)
    const seventh = await limiter.consume('k')
    expect(seventh.allowed).toBe(false)
    expect(seventh.retryAfterMs).toBe(10)
    clock.now += 10
    expect((await limiter.consume('k')).allowed).toBe(true)
    expect((await limiter.consume('k')).allowed).toBe(false)
  })

  test('leaky-bucket: delays 0, 500, 1000, then the full queue rejects with 500', async () => {
    const { limiter } = limiterAt(1_000_000, {
      algorithm: 'leaky-bucket',
      limit: 2,
      window: 1000,
      burst: 3,
    })
    const decisions = await burst(limiter, 'k', 4)
    expect(decisions.slice(0, 3).map((d) => [d.allowed, d.delayMs])).toEqual([
      [true, 0],
      [true, 500],
      [true, 1000],
    ])
    expect(decisions[3].allowed).toBe(false)
    expect(decisions[3].retryAfterMs).toBe(500)
  })

  test('cost: 4 + 4 pass, a third 4 is rejected with remaining 2, then 2 passes', async () => {
    for (const algorithm of ALGORITHMS) {
      const { limiter } = limiterAt(100_000, { algorithm, limit: 10, window: 60_000 })
      const [a, b, c] = await burst(limiter, 'k', 3, 4)
      expect([a.allowed, b.allowed, c.allowed]).toEqual([true, true, false])
      expect(c.remaining).toBe(2)
      const d = await limiter.consume('k', { cost: 2 })
      expect(d.allowed).toBe(true)
      expect(d.remaining).toBe(0)
    }
  })
})
