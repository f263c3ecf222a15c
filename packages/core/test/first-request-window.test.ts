import fc from 'fast-check'
import { ConfigError, createLimiter, MemoryStore, type PolicyOutcome } from '@sluice/core'
import { algorithmOf, resolvePolicy } from '@sluice/core/adapter'

// fixed-window with `anchor: 'first-request'`: each key's window starts at its own first
// request and lasts one window (the peers' windows), instead of at the clock's multiples.

function limiterAt(start: number, limit = 3, window = 1000) {
  const clock = { now: start }
  const limiter = createLimiter({
    algorithm: 'fixed-window',
    anchor: 'first-request',
    limit,
    window,
    clock: () => clock.now,
  })
  return { limiter, clock }
}

describe("fixed-window anchored at a key's first request", () => {
  test('a window starts at the first request and resets one window later', async () => {
    const { limiter, clock } = limiterAt(10_500)
    const first = await limiter.consume('k')
    expect(first).toMatchObject({ allowed: true, remaining: 2, resetMs: 1000 })
    clock.now = 11_200 // past 11_000, where a clock-aligned window would have reset
    await limiter.consume('k')
    expect(await limiter.consume('k')).toMatchObject({ allowed: true, remaining: 0, resetMs: 300 })
    expect(await limiter.consume('k')).toMatchObject({
      allowed: false,
      remaining: 0,
      resetMs: 300,
      retryAfterMs: 300,
    })
    clock.now = 11_500
    expect(await limiter.consume('k')).toMatchObject({ allowed: true, remaining: 2, resetMs: 1000 })
  })

  test("each key counts its own window: two keys' resets differ by when each began", async () => {
    const { limiter, clock } = limiterAt(0, 1, 60_000)
    await limiter.consume('a')
    clock.now = 25_000
    await limiter.consume('b')
    clock.now = 30_000
    expect((await limiter.consume('a')).retryAfterMs).toBe(30_000)
    expect((await limiter.consume('b')).retryAfterMs).toBe(55_000)
  })

  test('a rejected request or a peek does not start or extend a window', async () => {
    const { limiter, clock } = limiterAt(0, 2, 1000)
    expect(await limiter.peek('k')).toMatchObject({ remaining: 2, resetMs: 0 })
    await limiter.consume('k', { cost: 2 })
    clock.now = 900
    expect((await limiter.consume('k')).allowed).toBe(false)
    clock.now = 1000
    // The window began at 0, not at the rejection at 900.
    expect(await limiter.consume('k')).toMatchObject({ allowed: true, resetMs: 1000 })
  })

  test('a clock stepped back keeps the running window; stepped forward past its end, a new one', async () => {
    const { limiter, clock } = limiterAt(100_000, 20, 1000)
    const burst = async (): Promise<number> => {
      let admitted = 0
      for (let i = 0; i < 40; i++) if ((await limiter.consume('k')).allowed) admitted++
      return admitted
    }
    expect(await burst()).toBe(20)
    clock.now -= 1000
    expect(await burst()).toBe(0)
    clock.now -= 2000
    expect(await burst()).toBe(0)
    // Told as at most one window even though the window's end is 3 s away on this clock.
    expect((await limiter.consume('k')).retryAfterMs).toBe(1000)
    clock.now += 4000
    expect(await burst()).toBe(20)
  })

  test("a refund of a charge made in an ended window leaves the key's new window alone", () => {
    const policy = resolvePolicy({
      algorithm: 'fixed-window',
      anchor: 'first-request',
      limit: 5,
      window: 1000,
    })
    const impl = algorithmOf(policy)
    const state = [0, 0]
    impl.apply(state, 0, 100, policy, 2) // window 100..1100
    impl.apply(state, 0, 1200, policy, 1) // a new window from 1200
    impl.refund(state, 0, 1300, policy, 2, 100)
    expect(state).toEqual([1200, 1])
    impl.refund(state, 0, 1300, policy, 1, 1200)
    expect(state).toEqual([1200, 0])
  })

  test('the two anchors keep separate state, so switching never reads the other layout', async () => {
    const store = new MemoryStore()
    const clock = { now: 500 }
    const options = { algorithm: 'fixed-window', limit: 1, window: 1000, store } as const
    const aligned = createLimiter({ ...options, clock: () => clock.now })
    const perKey = createLimiter({ ...options, anchor: 'first-request', clock: () => clock.now })
    expect((await aligned.consume('k')).allowed).toBe(true)
    expect((await perKey.consume('k')).allowed).toBe(true)
    expect(resolvePolicy({ ...options, anchor: 'first-request' }).id).toBe('fk:1:1000')
    expect(resolvePolicy(options).id).toBe('fw:1:1000')
  })

  test('bad anchors are refused with the option and the value', () => {
    expect(() =>
      createLimiter({ algorithm: 'sliding-window', limit: 1, window: 1000, anchor: 'clock' }),
    ).toThrow(
      new ConfigError(
        '`anchor` must be unset for \'sliding-window\' (anchor applies to fixed-window); got "clock"',
      ),
    )
    expect(() =>
      createLimiter({
        algorithm: 'fixed-window',
        limit: 1,
        window: 1000,
        // @ts-expect-error: not an anchor
        anchor: 'first-hit',
      }),
    ).toThrow("`anchor` must be one of 'clock', 'first-request'; got \"first-hit\"")
    expect(() =>
      createLimiter({
        limits: [{ algorithm: 'gcra', limit: 1, window: 1000, anchor: 'first-request' }],
      }),
    ).toThrow('`limits[0].anchor` must be unset')
  })

  // An independent model of the promise: windows are [start, start + window) from the first
  // request counted while none runs; each admits at most `limit`.
  test('random traces: the outcome of every request matches the model of per-key windows', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 6 }),
        fc.constantFrom(7, 100, 1000),
        fc.array(
          fc.record({
            gap: fc.integer({ min: 0, max: 1500 }),
            cost: fc.integer({ min: 1, max: 4 }),
          }),
          { minLength: 1, maxLength: 50 },
        ),
        (limit, window, steps) => {
          const policy = resolvePolicy({
            algorithm: 'fixed-window',
            anchor: 'first-request',
            limit,
            window,
          })
          const impl = algorithmOf(policy)
          const state = [0, 0]
          let start = -Infinity
          let count = 0
          let now = 1_000_000
          for (const { gap, cost } of steps) {
            now += gap
            if (now >= start + window) count = 0
            const fits = cost <= limit && count + cost <= limit
            const out: PolicyOutcome = {
              allowed: false,
              remaining: 0,
              resetMs: 0,
              retryAfterMs: 0,
              delayMs: 0,
            }
            impl.consume?.(state, 0, now, policy, cost, out)
            expect(out.allowed).toBe(fits)
            if (fits && count === 0) start = now
            if (fits) count += cost
            const untilEnd = count > 0 ? start + window - now : window
            expect(out.remaining).toBe(Math.max(0, limit - count))
            if (cost <= limit) expect(out.resetMs).toBe(fits || count > 0 ? untilEnd : 0)
            if (!fits && cost <= limit) expect(out.retryAfterMs).toBe(untilEnd)
          }
        },
      ),
      { numRuns: 300 },
    )
  })
})
