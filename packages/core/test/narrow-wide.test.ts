import fc from 'fast-check'
import type { PolicyOutcome } from '../src'
import { REGISTRY, type AlgorithmName } from '../src/algorithms'
import { MAX_SAFE_PRODUCT } from '../src/algorithms/exact'
import { resolvePolicy } from '../src/options'
import { isWide } from '../src/policy'

// Each meter's file holds its transitions twice: on doubles for narrow policies and on BigInts
// for wide ones. At the boundary (capacity x window just under 2^50, the largest the narrow ones
// take) both are exact, so they must agree step by step: a change to one that the other does not
// follow fails here.

const blank = (): PolicyOutcome => ({
  allowed: false,
  remaining: 0,
  resetMs: 0,
  retryAfterMs: 0,
  delayMs: 0,
})

/**
 * A wide state in the narrow one's layout: gcra's is the same; a bucket's wide state splits its
 * level at the window ([whole units, remainder, last refill]) where the narrow one holds it whole.
 */
function asNarrow(state: number[], windowMs: number): number[] {
  if (state.length === 2) return state
  return [Number(BigInt(state[0]) * BigInt(windowMs) + BigInt(state[1])), state[2]]
}

const WINDOWS = [1000, 60_000, 3_600_000, 86_400_000, 31 * 86_400_000]

/** limit, burst and window with max(limit, burst) x window within 2^50 by at most `slack` units. */
const boundary = fc
  .record({
    windowMs: fc.constantFrom(...WINDOWS),
    below: fc.integer({ min: 0, max: 1000 }),
    burstShare: fc.integer({ min: 1, max: 1000 }),
    burstIsCapacity: fc.boolean(),
  })
  .map(({ windowMs, below, burstShare, burstIsCapacity }) => {
    const top = Math.floor(MAX_SAFE_PRODUCT / windowMs) - below
    // Either the burst is the largest (limit below it) or the limit is (burst a share of it).
    const burst = burstIsCapacity ? top : Math.max(1, Math.floor((top / 1000) * burstShare))
    const limit = burstIsCapacity ? Math.max(1, Math.floor((top / 1000) * burstShare)) : top
    return { windowMs, limit, burst }
  })

const step = fc.record({
  op: fc.constantFrom('decide', 'consume', 'wait', 'refund', 'penalize'),
  // Share of the window the clock moves by (it steps back sometimes).
  dt: fc.integer({ min: -50, max: 1000 }),
  // Share of the burst a request costs, per mille (past 1000: more than it can ever take).
  cost: fc.integer({ min: 0, max: 1100 }),
  maxDelay: fc.integer({ min: 1, max: 1000 }),
})

const meters = REGISTRY.filter((row) => 'wide' in row)

test('every meter has wide transitions, and only meters do', () => {
  expect(meters.map((row) => row.name)).toEqual(
    REGISTRY.filter((row) => row.family === 'meter').map((row) => row.name),
  )
})

describe.each(meters.map((row) => [row.name, row] as const))(
  '%s: narrow and wide transitions agree at the 2^50 boundary',
  (name, row) => {
    test('outcomes and expiries, step by step', () => {
      fc.assert(
        fc.property(boundary, fc.array(step, { minLength: 1, maxLength: 40 }), (size, steps) => {
          const policy = resolvePolicy({
            algorithm: name as AlgorithmName,
            limit: size.limit,
            burst: size.burst,
            window: size.windowMs,
          })
          expect(isWide(policy)).toBe(false)
          const { narrow, wide } = row as Required<typeof row>
          const a = new Array<number>(narrow.slots(policy)).fill(0)
          const b = new Array<number>(wide.slots(policy)).fill(0)
          let now = 1_764_000_000_000
          for (const s of steps) {
            now += Math.floor((policy.windowMs / 1000) * s.dt)
            const cost = Math.floor((policy.burst / 1000) * s.cost)
            const maxDelay =
              s.op === 'wait' ? Math.ceil((policy.windowMs / 1000) * s.maxDelay) : undefined
            if (s.op === 'refund') {
              narrow.refund(a, 0, now, policy, cost)
              wide.refund(b, 0, now, policy, cost)
            } else if (s.op === 'penalize') {
              narrow.penalize(a, 0, now, policy, cost)
              wide.penalize(b, 0, now, policy, cost)
            } else {
              const x = blank()
              const y = blank()
              narrow.decide(a, 0, now, policy, cost, x, maxDelay)
              wide.decide(b, 0, now, policy, cost, y, maxDelay)
              expect(y).toEqual(x)
              if (s.op !== 'decide' && x.allowed && cost > 0) {
                narrow.apply(a, 0, now, policy, cost)
                wide.apply(b, 0, now, policy, cost)
              }
            }
            expect(wide.expiresAt(b, 0, policy)).toBe(narrow.expiresAt(a, 0, policy))
            // Outcomes round to whole ms and units; the states must match to the last unit.
            expect(asNarrow(b, policy.windowMs)).toEqual(a)
          }
        }),
        { numRuns: 300 },
      )
    })
  },
)
