import fc from 'fast-check'
import { createLimiter, localTier, MemoryStore, type Policy, type PolicyOutcome } from '../src'
import { algorithms, algorithmOf } from '../src/algorithms'
import { mulDivCeil, mulDivFloor, productAtLeast } from '../src/algorithms/exact'
import { gcraWide } from '../src/algorithms/gcra'
import { leakyBucketWide } from '../src/algorithms/leaky-bucket'
import { tokenBucketWide } from '../src/algorithms/token-bucket'
import type { Algorithm } from '../src/algorithms/types'
import { resolvePolicy } from '../src/options'
import { isWide } from '../src/policy'

const DAY = 86_400_000
const blank = (): PolicyOutcome => ({
  allowed: false,
  remaining: 0,
  resetMs: 0,
  retryAfterMs: 0,
  delayMs: 0,
})

describe('exact products past 2^53', () => {
  const int = fc.oneof(
    fc.integer({ min: 0, max: 2 ** 26 }),
    fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
  )
  const positive = fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER })

  test('mulDivFloor and mulDivCeil equal BigInt division', () => {
    fc.assert(
      fc.property(int, int, positive, (a, b, c) => {
        const exact = BigInt(a) * BigInt(b)
        const floor = exact / BigInt(c)
        const ceil = floor * BigInt(c) === exact ? floor : floor + 1n
        // Only quotients a double holds exactly are asked for.
        fc.pre(ceil <= BigInt(Number.MAX_SAFE_INTEGER))
        expect(mulDivFloor(a, b, c)).toBe(Number(floor))
        expect(mulDivCeil(a, b, c)).toBe(Number(ceil))
      }),
      { numRuns: 2000 },
    )
  })

  test('productAtLeast equals BigInt comparison', () => {
    fc.assert(
      fc.property(int, int, int, int, (a, b, c, d) => {
        expect(productAtLeast(a, b, c, d)).toBe(BigInt(a) * BigInt(b) >= BigInt(c) * BigInt(d))
      }),
      { numRuns: 2000 },
    )
  })

  test('doubles would round here: the cases the BigInt path exists for', () => {
    // 10^12 x 31 days is 2.7 x 10^21: a double's product and quotient are off there.
    // Found by search: a x b is just below a multiple of c, and the double rounds up to it.
    const a = 999_434_982_173
    const b = 1_563_631_102
    const c = 31 * DAY
    const exact = (BigInt(a) * BigInt(b)) / BigInt(c)
    expect(BigInt(Math.floor((a * b) / c))).not.toBe(exact)
    expect(BigInt(mulDivFloor(a, b, c))).toBe(exact)
  })
})

describe('wide meters decide as the narrow ones wherever those are exact', () => {
  // The wide transitions are the narrow ones in BigInt: on any narrow policy they must give
  // the same outcomes and expiries, step by step, whatever the operations and clock do.
  const pairs: [string, Algorithm, Algorithm][] = [
    ['gcra', algorithms.gcra, gcraWide],
    ['token-bucket', algorithms['token-bucket'], tokenBucketWide],
    ['leaky-bucket', algorithms['leaky-bucket'], leakyBucketWide],
  ]
  const step = fc.record({
    op: fc.constantFrom('decide', 'consume', 'wait', 'refund', 'penalize'),
    // The clock steps back sometimes.
    dt: fc.integer({ min: -2000, max: 20_000 }),
    cost: fc.integer({ min: 0, max: 12 }),
    maxDelayMs: fc.integer({ min: 1, max: 30_000 }),
  })
  for (const [name, narrow, wide] of pairs) {
    test(name, () => {
      fc.assert(
        fc.property(
          fc.integer({ min: 1, max: 10 }),
          fc.integer({ min: 1, max: 10 }),
          fc.constantFrom(1000, 7000, 60_000, 3_600_000),
          fc.array(step, { minLength: 1, maxLength: 60 }),
          (limit, burst, windowMs, steps) => {
            const policy = resolvePolicy({
              algorithm: name as 'gcra',
              limit,
              burst,
              window: windowMs,
            })
            const a = new Array<number>(narrow.slots(policy)).fill(0)
            const b = new Array<number>(wide.slots(policy)).fill(0)
            let now = 1_700_000_000_000
            for (const s of steps) {
              now += s.dt
              const maxDelay = s.op === 'wait' ? s.maxDelayMs : undefined
              if (s.op === 'refund') {
                narrow.refund(a, 0, now, policy, s.cost)
                wide.refund(b, 0, now, policy, s.cost)
              } else if (s.op === 'penalize') {
                narrow.penalize(a, 0, now, policy, s.cost)
                wide.penalize(b, 0, now, policy, s.cost)
              } else {
                const x = blank()
                const y = blank()
                narrow.decide(a, 0, now, policy, s.cost, x, maxDelay)
                wide.decide(b, 0, now, policy, s.cost, y, maxDelay)
                expect(y).toEqual(x)
                if (s.op !== 'decide' && x.allowed && s.cost > 0) {
                  narrow.apply(a, 0, now, policy, s.cost)
                  wide.apply(b, 0, now, policy, s.cost)
                }
              }
              expect(wide.expiresAt(b, 0, policy)).toBe(narrow.expiresAt(a, 0, policy))
            }
          },
        ),
        { numRuns: 300 },
      )
    })
  }
})

describe('budgets at LLM-token scale', () => {
  test('a limit past 2^50 x window is wide and runs the wide meters', () => {
    const tokens = resolvePolicy({ algorithm: 'gcra', limit: 1e9, window: '1d' })
    expect(isWide(tokens)).toBe(true)
    expect(algorithmOf(tokens)).toBe(gcraWide)
    const small = resolvePolicy({ algorithm: 'gcra', limit: 1000, window: '1d' })
    expect(algorithmOf(small)).toBe(algorithms.gcra)
  })

  /**
   * GCRA written out in BigInt, independently of core: the theoretical arrival time in units of
   * 1/limit ms, and the answer every decision must give.
   */
  function oracle(policy: Policy) {
    const L = BigInt(policy.limit)
    const W = BigInt(policy.windowMs)
    const capacity = BigInt(policy.burst) * W
    let tat = 0n
    return (now: number, cost: number) => {
      const t = BigInt(now) * L
      const backlog = tat > t ? tat - t : 0n
      const after = backlog + BigInt(cost) * W
      if (after <= capacity) {
        tat = t + after
        return { allowed: true, remaining: Number((capacity - after) / W) }
      }
      const wait = after - capacity
      return { allowed: false, retryAfterMs: Number((wait + L - 1n) / L) }
    }
  }

  for (const [limit, window] of [
    [1e12, 31 * DAY],
    [999_999_999_989, 31 * DAY],
    [1e9, DAY],
    [2 ** 50, 999_983],
  ] as const) {
    test(`gcra and token-bucket, ${limit} per ${window} ms, every answer exact`, async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(
            fc.record({
              dt: fc.integer({ min: 0, max: Math.floor(window / 50) }),
              share: fc.integer({ min: 1, max: 400 }),
            }),
            { minLength: 1, maxLength: 80 },
          ),
          async (steps) => {
            for (const algorithm of ['gcra', 'token-bucket'] as const) {
              let now = 1_764_000_000_000
              const limiter = createLimiter({
                store: new MemoryStore(),
                algorithm,
                limit,
                window,
                clock: () => now,
              })
              const expected = oracle(resolvePolicy({ algorithm, limit, window }))
              for (const { dt, share } of steps) {
                now += dt
                // Costs from a thousandth of the limit to 40% of it, rarely whole numbers.
                const cost = Math.max(1, Math.floor((limit / 1000) * share) - share)
                const decision = await limiter.consume('k', { cost })
                const want = expected(now, cost)
                expect(decision.allowed).toBe(want.allowed)
                if (want.allowed) expect(decision.remaining).toBe(want.remaining)
                else expect(decision.retryAfterMs).toBe(want.retryAfterMs)
              }
            }
          },
        ),
        { numRuns: 40 },
      )
    })
  }

  test('fixed-window and sliding-window count 10^12 exactly', async () => {
    let now = 31 * DAY * 570_000 // a window boundary
    for (const algorithm of ['fixed-window', 'sliding-window'] as const) {
      const limiter = createLimiter({
        store: new MemoryStore(),
        algorithm,
        limit: 1e12,
        window: '31d',
        clock: () => now,
      })
      expect((await limiter.consume('k', { cost: 1e12 - 1 })).remaining).toBe(0 + 1)
      expect((await limiter.consume('k')).remaining).toBe(0)
      const refused = await limiter.consume('k')
      expect(refused.allowed).toBe(false)
      now += 31 * DAY
      if (algorithm === 'sliding-window') {
        // One window on, the whole of the last one still weighs 1 - 1ms/31d of its count:
        // floor(10^12 x (31d - 1) / 31d) = 10^12 - 1 at the first ms of the next bucket.
        now += 1
        const d = await limiter.peek('k')
        const used = (10n ** 12n * BigInt(31 * DAY - 1)) / BigInt(31 * DAY)
        expect(d.remaining).toBe(Number(10n ** 12n - used))
      } else {
        expect((await limiter.peek('k')).remaining).toBe(1e12)
      }
    }
  })
})

describe('the local tier over a wide limit', () => {
  test.each(['gcra', 'token-bucket', 'fixed-window', 'sliding-window'] as const)(
    '%s: leases, admits up to the budget, and returns every unspent unit on close',
    async (algorithm) => {
      const now = 1_764_000_000_000
      const shared = new MemoryStore()
      const tier = localTier(shared, {})
      const options = { algorithm, limit: 1e12, window: '31d', clock: () => now } as const
      const limiter = createLimiter({ ...options, store: tier })
      let admitted = 0
      for (let i = 0; i < 200; i++) {
        if ((await limiter.consume('k', { cost: 7e9 })).allowed) admitted += 7e9
      }
      // 142 x 7e9 fit in 10^12; what the tier leased but did not spend goes back on close.
      expect(admitted).toBe(142 * 7e9)
      await tier.close()
      const direct = createLimiter({ ...options, store: shared })
      expect(1e12 - (await direct.peek('k')).remaining).toBe(admitted)
    },
  )
})

describe('sizes that stay refused', () => {
  test('sliding-log keeps one entry per unit: limit x window stays under 2^50', () => {
    expect(() => resolvePolicy({ algorithm: 'sliding-log', limit: 1e9, window: '1d' })).toThrow(
      "`limit` must be small enough that limit x window (86400000 ms) stays under 2^50 for 'sliding-log'",
    )
  })

  test('limit and burst at most 2^50; a full bucket drains within 2^50 ms', () => {
    expect(() => resolvePolicy({ limit: 2 ** 50 + 1, window: '1s' })).toThrow(
      '`limit` must be at most 2^50 (1125899906842624); got 1125899906842625',
    )
    expect(() =>
      resolvePolicy({ algorithm: 'gcra', limit: 1, burst: 2 ** 40, window: '1h' }),
    ).toThrow('`burst` must be small enough that a full bucket drains within 2^50 ms')
  })

  test('a throttle that would scale a narrow limit past 2^50 is refused, naming the factor', () => {
    expect(() => createLimiter({ limit: 1e8, window: '1h', throttle: { elastic: 10 } })).toThrow(
      /`throttle.elastic` must be a factor of at most 3.12 for '100000000-per-1h'/,
    )
    expect(() =>
      createLimiter({ limit: 1e8, window: '1h', throttle: { elastic: 3 } }),
    ).not.toThrow()
    // Wide already: scaled it stays wide.
    expect(() =>
      createLimiter({ limit: 1e12, window: '1d', throttle: { soft: 0.5 } }),
    ).not.toThrow()
  })
})
