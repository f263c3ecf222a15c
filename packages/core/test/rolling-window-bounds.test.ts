import fc from 'fast-check'
import { createLimiter, type AlgorithmName } from '@sluice/core'

// What each algorithm admits at most in ANY span of one window's length (not only in its own
// aligned windows), as docs/algorithms.md states it: searched for with adversarial arrival
// patterns, and reached by a known pattern so that each stated bound is tight.
const W = 1000
const L = 10
const B = 4

interface Case {
  algorithm: AlgorithmName
  burst?: number
  precision?: number
  /** The stated worst case in any span of W ms. */
  bound: number
}

const CASES: Case[] = [
  { algorithm: 'fixed-window', bound: 2 * L },
  { algorithm: 'sliding-window', bound: 2 * L },
  { algorithm: 'sliding-window', precision: 4, bound: 2 * L },
  { algorithm: 'sliding-log', bound: L },
  { algorithm: 'token-bucket', burst: B, bound: B + L - 1 },
  { algorithm: 'gcra', burst: B, bound: B + L - 1 },
  { algorithm: 'leaky-bucket', burst: B, bound: B + L - 1 },
]

/** Admission times of requests (cost 1) arriving at `times`, on a fresh memory limiter. */
async function admitted(c: Case, times: readonly number[]): Promise<number[]> {
  let now = 0
  const limiter = createLimiter({
    algorithm: c.algorithm,
    limit: L,
    window: W,
    ...(c.burst === undefined ? {} : { burst: c.burst }),
    ...(c.precision === undefined ? {} : { precision: c.precision }),
    clock: () => now,
  })
  const out: number[] = []
  for (const t of times) {
    now = t
    if ((await limiter.consume('k')).allowed) out.push(t)
  }
  return out
}

/** Most admissions in any half-open span [t, t + W). */
function mostInAnySpan(times: readonly number[]): number {
  let most = 0
  let start = 0
  for (let end = 0; end < times.length; end++) {
    while (times[end] - times[start] >= W) start++
    most = Math.max(most, end - start + 1)
  }
  return most
}

/** Arrivals bunched near window edges and spread out, in time order. */
const arrivals = fc
  .array(
    fc.oneof(
      fc.integer({ min: 0, max: 4 * W }),
      fc.integer({ min: 1, max: 3 }).chain((k) => fc.integer({ min: k * W - 20, max: k * W + 20 })),
    ),
    { minLength: 1, maxLength: 120 },
  )
  .map((times) => times.sort((a, b) => a - b))

describe.each(CASES)(
  '$algorithm (limit 10 per 1000 ms, burst $burst, precision $precision)',
  (c) => {
    test(`never admits more than ${c.bound} in any span of one window`, async () => {
      await fc.assert(
        fc.asyncProperty(arrivals, async (times) => {
          expect(mostInAnySpan(await admitted(c, times))).toBeLessThanOrEqual(c.bound)
        }),
        { numRuns: 300, seed: 21 },
      )
    })

    test(`reaches ${c.bound}: a burst at the end of a window, then a request every ms`, async () => {
      const times = [
        ...Array.from({ length: 2 * L }, () => W - 1),
        ...Array.from({ length: W }, (_, i) => W + i),
      ]
      expect(mostInAnySpan(await admitted(c, times))).toBe(c.bound)
    })
  },
)
