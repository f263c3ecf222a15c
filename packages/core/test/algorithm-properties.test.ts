import fc from 'fast-check'
import { ALGORITHMS, type AlgorithmName, type Policy, type PolicyOutcome } from '@sluice/core'
import { algorithms, resolvePolicy } from '@sluice/core/adapter'

/*
 * Random traces through each pure transition, checking the promise each algorithm makes, and
 * that `remaining`, `retryAfterMs` and `resetMs` tell the truth about what passes next.
 */

interface Step {
  gap: number
  cost: number
}

const outcome = (): PolicyOutcome => ({
  allowed: false,
  remaining: 0,
  resetMs: 0,
  retryAfterMs: 0,
  delayMs: 0,
})

function policyArb(algorithm: AlgorithmName): fc.Arbitrary<Policy> {
  return fc
    .record({
      limit: fc.integer({ min: 1, max: 12 }),
      window: fc.constantFrom(7, 100, 1000, 60_000),
      burst: fc.integer({ min: 1, max: 12 }),
      precision: fc.constantFrom(1, 1, 2, 4),
    })
    .map(({ limit, window, burst, precision }) =>
      resolvePolicy({
        algorithm,
        limit,
        window,
        ...(['token-bucket', 'leaky-bucket', 'gcra'].includes(algorithm) ? { burst } : {}),
        ...(algorithm === 'sliding-window' && window % precision === 0 ? { precision } : {}),
      }),
    )
}

function traceArb(policy: Policy): fc.Arbitrary<Step[]> {
  const gap = fc.oneof(
    fc.constant(0),
    fc.integer({ min: 0, max: Math.ceil(policy.windowMs / 3) }),
    fc.integer({ min: 0, max: policy.windowMs * 2 }),
  )
  return fc.array(fc.record({ gap, cost: fc.integer({ min: 1, max: 3 }) }), {
    minLength: 1,
    maxLength: 60,
  })
}

interface Admitted {
  at: number
  cost: number
}

/** Runs a trace through the transition; returns what was admitted and the outcomes seen. */
function run(
  policy: Policy,
  trace: Step[],
  start: number,
  check?: (state: number[], now: number, out: PolicyOutcome, cost: number) => void,
) {
  const algorithm = algorithms[policy.algorithm]
  const state = new Array<number>(algorithm.slots(policy)).fill(0)
  const admitted: Admitted[] = []
  let now = start
  for (const step of trace) {
    now += step.gap
    const out = outcome()
    algorithm.decide(state, 0, now, policy, step.cost, out)
    check?.(state, now, out, step.cost)
    if (out.allowed) {
      algorithm.apply(state, 0, now, policy, step.cost)
      admitted.push({ at: now, cost: step.cost })
    }
  }
  return admitted
}

function decideOn(policy: Policy, state: number[], now: number, cost: number): PolicyOutcome {
  const out = outcome()
  algorithms[policy.algorithm].decide(state, 0, now, policy, cost, out)
  return out
}

const START = fc.integer({ min: 0, max: 2_000_000_000_000 })
const runs = { numRuns: 300 }

describe('invariants over random traces', () => {
  test('sliding-log: no window of length `window` ever admits more than `limit`', () => {
    fc.assert(
      fc.property(
        policyArb('sliding-log').chain((p) => fc.tuple(fc.constant(p), traceArb(p), START)),
        ([policy, trace, start]) => {
          const admitted = run(policy, trace, start)
          for (const last of admitted) {
            const inside = admitted.filter(
              (a) => a.at > last.at - policy.windowMs && a.at <= last.at,
            )
            expect(inside.reduce((sum, a) => sum + a.cost, 0)).toBeLessThanOrEqual(policy.limit)
          }
        },
      ),
      runs,
    )
  })

  test('sliding-log: its ring decides as a plain sorted log would, as the limit changes and the clock steps back', () => {
    // The limit switches between two values, as an elastic throttle's does; the row holds the wider.
    const arb = fc.record({
      limits: fc.tuple(fc.integer({ min: 1, max: 8 }), fc.integer({ min: 1, max: 8 })),
      window: fc.constantFrom(7, 100),
      steps: fc.array(
        fc.record({
          gap: fc.integer({ min: -30, max: 60 }),
          cost: fc.integer({ min: 1, max: 3 }),
          wide: fc.boolean(),
        }),
        { minLength: 1, maxLength: 80 },
      ),
    })
    fc.assert(
      fc.property(arb, ({ limits, window, steps }) => {
        const [narrow, wide] = limits.map((limit) =>
          resolvePolicy({ algorithm: 'sliding-log', limit, window }),
        )
        const impl = algorithms['sliding-log']
        const state = new Array<number>(Math.max(impl.slots(narrow), impl.slots(wide))).fill(0)
        let log: number[] = [] // ascending, as the algorithm keeps it
        let now = 1000
        for (const step of steps) {
          now += step.gap
          const policy = step.wide ? wide : narrow
          const live = log.filter((at) => at > now - window)
          const out = decideOn(policy, state, now, step.cost)
          const fits = live.length + step.cost <= policy.limit && step.cost <= policy.limit
          expect(out.allowed).toBe(fits)
          expect(out.remaining).toBe(
            Math.max(0, policy.limit - live.length - (fits ? step.cost : 0)),
          )
          if (!fits && step.cost <= policy.limit) {
            const mustExpire = live[live.length + step.cost - policy.limit - 1]
            expect(out.retryAfterMs).toBe(mustExpire + window - now)
          }
          if (fits) {
            impl.apply(state, 0, now, policy, step.cost)
            log = [...live, ...Array<number>(step.cost).fill(now)].sort((a, b) => a - b)
          }
        }
      }),
      runs,
    )
  })

  test('fixed-window and sliding-window: never more than `limit` inside one aligned window', () => {
    for (const algorithm of ['fixed-window', 'sliding-window'] as const) {
      fc.assert(
        fc.property(
          policyArb(algorithm).chain((p) => fc.tuple(fc.constant(p), traceArb(p), START)),
          ([policy, trace, start]) => {
            const perWindow = new Map<number, number>()
            for (const a of run(policy, trace, start)) {
              const window = Math.floor(a.at / policy.windowMs)
              perWindow.set(window, (perWindow.get(window) ?? 0) + a.cost)
            }
            for (const total of perWindow.values()) expect(total).toBeLessThanOrEqual(policy.limit)
          },
        ),
        runs,
      )
    }
  })

  test('token-bucket, gcra, leaky-bucket: at most burst + rate x t in any span t', () => {
    for (const algorithm of ['token-bucket', 'gcra', 'leaky-bucket'] as const) {
      fc.assert(
        fc.property(
          policyArb(algorithm).chain((p) => fc.tuple(fc.constant(p), traceArb(p), START)),
          ([policy, trace, start]) => {
            const admitted = run(policy, trace, start)
            for (let i = 0; i < admitted.length; i++) {
              let total = 0
              for (let j = i; j < admitted.length; j++) {
                total += admitted[j].cost
                const span = admitted[j].at - admitted[i].at
                // Integer form of total <= burst + limit x span / window.
                expect(total * policy.windowMs).toBeLessThanOrEqual(
                  policy.burst * policy.windowMs + policy.limit * span,
                )
              }
            }
          },
        ),
        runs,
      )
    }
  })

  test('leaky-bucket: admitted requests leave no faster than limit / window', () => {
    fc.assert(
      fc.property(
        policyArb('leaky-bucket').chain((p) => fc.tuple(fc.constant(p), traceArb(p), START)),
        ([policy, trace, start]) => {
          const departures: number[] = []
          run(policy, trace, start, (_state, now, out) => {
            if (out.allowed) departures.push(now + out.delayMs)
          })
          for (let i = 1; i < departures.length; i++)
            expect(departures[i]).toBeGreaterThanOrEqual(departures[i - 1])
        },
      ),
      runs,
    )
  })
})

describe('what a decision says is what happens next', () => {
  for (const algorithm of ALGORITHMS) {
    test(`${algorithm}: remaining, retryAfterMs and resetMs are exact`, () => {
      fc.assert(
        fc.property(
          policyArb(algorithm).chain((p) => fc.tuple(fc.constant(p), traceArb(p), START)),
          ([policy, trace, start]) => {
            run(policy, trace, start, (state, now, out, cost) => {
              if (out.allowed) {
                // Exactly `remaining` more unit requests pass at the same instant.
                const after = [...state]
                algorithms[policy.algorithm].apply(after, 0, now, policy, cost)
                for (let i = 0; i < out.remaining; i++) {
                  const next = decideOn(policy, after, now, 1)
                  expect(next.allowed).toBe(true)
                  algorithms[policy.algorithm].apply(after, 0, now, policy, 1)
                }
                expect(decideOn(policy, after, now, 1).allowed).toBe(false)
              } else if (Number.isFinite(out.retryAfterMs)) {
                expect(out.retryAfterMs).toBeGreaterThan(0)
                expect(decideOn(policy, state, now + out.retryAfterMs - 1, cost).allowed).toBe(
                  false,
                )
                expect(decideOn(policy, state, now + out.retryAfterMs, cost).allowed).toBe(true)
              } else {
                expect(cost).toBeGreaterThan(policy.burst)
              }
              // Once resetMs has passed (with nothing else arriving), the whole quota is back.
              // sliding-window's reset is when its newest requests begin to fade (IETF `t`,
              // "more quota"): never beyond one window, and the quota is whole a bucket later.
              const settled = [...state]
              if (out.allowed) algorithms[policy.algorithm].apply(settled, 0, now, policy, cost)
              let wholeAt = now + out.resetMs
              if (policy.algorithm === 'sliding-window') {
                expect(out.resetMs).toBeLessThanOrEqual(policy.windowMs)
                wholeAt += policy.windowMs / policy.precision
              }
              expect(decideOn(policy, settled, wholeAt, 0).remaining).toBe(policy.burst)
              expect(out.remaining).toBeGreaterThanOrEqual(0)
            })
          },
        ),
        runs,
      )
    })
  }

  test('a rejected request changes no state, for every algorithm', () => {
    for (const algorithm of ALGORITHMS) {
      fc.assert(
        fc.property(
          policyArb(algorithm).chain((p) => fc.tuple(fc.constant(p), traceArb(p), START)),
          ([policy, trace, start]) => {
            const algorithmImpl = algorithms[policy.algorithm]
            const state = new Array<number>(algorithmImpl.slots(policy)).fill(0)
            let now = start
            for (const step of trace) {
              now += step.gap
              const before = [...state]
              const out = decideOn(policy, state, now, step.cost)
              if (out.allowed) algorithmImpl.apply(state, 0, now, policy, step.cost)
              else expect(state).toEqual(before)
            }
          },
        ),
        { numRuns: 100 },
      )
    }
  })

  /** A state reached by a random trace of consumes, and the time it ends at. */
  function reached(policy: Policy, trace: Step[], start: number) {
    const impl = algorithms[policy.algorithm]
    const state = new Array<number>(impl.slots(policy)).fill(0)
    let now = start
    for (const step of trace) {
      now += step.gap
      if (decideOn(policy, state, now, step.cost).allowed) {
        impl.apply(state, 0, now, policy, step.cost)
      }
    }
    return { state, now, impl }
  }

  const isMeter = (algorithm: AlgorithmName) =>
    algorithm === 'token-bucket' || algorithm === 'leaky-bucket' || algorithm === 'gcra'

  test('penalize takes exactly min(cost, remaining) and never goes beyond full', () => {
    for (const algorithm of ALGORITHMS) {
      fc.assert(
        fc.property(
          policyArb(algorithm).chain((p) =>
            fc.tuple(fc.constant(p), traceArb(p), START, fc.integer({ min: 1, max: 30 })),
          ),
          ([policy, trace, start, cost]) => {
            const { state, now, impl } = reached(policy, trace, start)
            const before = decideOn(policy, state, now, 0).remaining
            impl.penalize(state, 0, now, policy, cost)
            const after = decideOn(policy, state, now, 0)
            expect(after.remaining).toBe(Math.max(0, before - cost))
            // Full, not beyond: a meter refills within burst x window / limit.
            if (isMeter(algorithm)) {
              expect(after.resetMs).toBeLessThanOrEqual(
                Math.ceil((policy.burst * policy.windowMs) / policy.limit),
              )
            } else {
              expect(after.resetMs).toBeLessThanOrEqual(policy.windowMs)
            }
            // Penalizing a full counter again changes nothing.
            if (after.remaining === 0 && !isMeter(algorithm)) {
              const full = [...state]
              impl.penalize(state, 0, now, policy, cost)
              expect(state).toEqual(full)
            }
          },
        ),
        { numRuns: 150 },
      )
    }
  })

  test('reward (refund without `at`) gives back from the newest usage, never below empty', () => {
    for (const algorithm of ALGORITHMS) {
      fc.assert(
        fc.property(
          policyArb(algorithm).chain((p) =>
            fc.tuple(fc.constant(p), traceArb(p), START, fc.integer({ min: 1, max: 30 })),
          ),
          ([policy, trace, start, cost]) => {
            const { state, now, impl } = reached(policy, trace, start)
            const before = decideOn(policy, state, now, 0).remaining
            impl.refund(state, 0, now, policy, cost)
            const after = decideOn(policy, state, now, 0).remaining
            if (algorithm === 'sliding-window') {
              // The oldest bucket counts only in part: a unit given back there frees at most one.
              expect(after).toBeGreaterThanOrEqual(before)
              expect(after).toBeLessThanOrEqual(Math.min(policy.burst, before + cost))
            } else {
              expect(after).toBe(Math.min(policy.burst, before + cost))
            }
            // Never below empty: a huge reward leaves exactly an empty state's answers.
            impl.refund(state, 0, now, policy, 1000)
            const empty = new Array<number>(impl.slots(policy)).fill(0)
            expect(decideOn(policy, state, now, 1).remaining).toBe(
              decideOn(policy, empty, now, 1).remaining,
            )
          },
        ),
        { numRuns: 150 },
      )
    }
  })

  test('meters with maxDelayMs: reservations are released no faster than burst + rate x t', () => {
    for (const algorithm of ['token-bucket', 'gcra', 'leaky-bucket'] as const) {
      fc.assert(
        fc.property(
          policyArb(algorithm).chain((p) =>
            fc.tuple(
              fc.constant(p),
              traceArb(p),
              START,
              fc.integer({ min: 1, max: p.windowMs * 3 }),
            ),
          ),
          ([policy, trace, start, maxDelayMs]) => {
            const impl = algorithms[policy.algorithm]
            const state = new Array<number>(impl.slots(policy)).fill(0)
            const released: Admitted[] = []
            let now = start
            for (const step of trace) {
              now += step.gap
              const out = outcome()
              impl.decide(state, 0, now, policy, step.cost, out, maxDelayMs)
              const plain = decideOn(policy, state, now, step.cost)
              if (out.allowed) {
                expect(out.delayMs).toBeLessThanOrEqual(maxDelayMs)
                // What fits now is answered as without a reservation.
                if (plain.allowed) expect(out).toEqual(plain)
                else expect(out.delayMs).toBeGreaterThanOrEqual(plain.retryAfterMs)
                impl.apply(state, 0, now, policy, step.cost)
                released.push({ at: now + out.delayMs, cost: step.cost })
              } else if (plain.allowed) {
                // Only leaky-bucket: room in the queue, but a shaping delay past maxDelayMs.
                expect(algorithm).toBe('leaky-bucket')
                expect(plain.delayMs).toBeGreaterThan(maxDelayMs)
              } else {
                expect(out.retryAfterMs).toBeGreaterThanOrEqual(1)
              }
            }
            released.sort((a, b) => a.at - b.at)
            for (let i = 0; i < released.length; i++) {
              let total = 0
              for (let j = i; j < released.length; j++) {
                total += released[j].cost
                // Each delay is rounded up to a whole ms on its own, so two releases may be
                // up to 1 ms closer together than the exact pace (never earlier than it).
                const span = released[j].at - released[i].at + 1
                expect(total * policy.windowMs).toBeLessThanOrEqual(
                  policy.burst * policy.windowMs + policy.limit * span,
                )
              }
            }
          },
        ),
        { numRuns: 200 },
      )
    }
  })
})

describe('consume, the one-pass path of a single policy', () => {
  test('leaves the outcome and the state exactly as decide, then apply, would', () => {
    const fused = ALGORITHMS.filter((algorithm) => algorithms[algorithm].consume !== undefined)
    // The memory store's hot path takes it for these; an algorithm without one falls back.
    expect(fused).toEqual([
      'fixed-window',
      'sliding-window',
      'token-bucket',
      'leaky-bucket',
      'gcra',
    ])
    for (const algorithm of fused) {
      const impl = algorithms[algorithm]
      const steps = (policy: Policy) =>
        fc.array(
          fc.record({
            // Within a window, a few windows on (buckets left stale), or now and then a step
            // back in time, which the one-pass paths leave to decide + apply.
            gap: fc.oneof(
              fc.constant(0),
              fc.integer({ min: 0, max: policy.windowMs }),
              fc.integer({ min: 1, max: 3 }).map((n) => n * policy.windowMs),
              fc.integer({ min: 0, max: 3 * policy.windowMs }),
              fc.integer({ min: -2000, max: -1 }),
            ),
            cost: fc.integer({ min: 0, max: 4 }),
            maxDelayMs: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 5000 })),
          }),
          { minLength: 1, maxLength: 60 },
        )
      // A start near 0, and one of today's timestamps (window numbers past 2^31 for small windows).
      const start = fc.oneof(fc.integer({ min: 0, max: 10_000 }), fc.constant(1_763_700_000_000))
      fc.assert(
        fc.property(
          policyArb(algorithm).chain((policy) => fc.tuple(fc.constant(policy), steps(policy))),
          start,
          ([policy, trace], at) => {
            const viaConsume = new Array<number>(impl.slots(policy)).fill(0)
            const viaDecide = new Array<number>(impl.slots(policy)).fill(0)
            let now = at
            for (const step of trace) {
              now = Math.max(0, now + step.gap)
              const one = outcome()
              const two = outcome()
              impl.consume!(viaConsume, 0, now, policy, step.cost, one, step.maxDelayMs)
              impl.decide(viaDecide, 0, now, policy, step.cost, two, step.maxDelayMs)
              if (two.allowed && step.cost !== 0) impl.apply(viaDecide, 0, now, policy, step.cost)
              expect(one).toEqual(two)
              expect(viaConsume).toEqual(viaDecide)
            }
          },
        ),
        { numRuns: 500 },
      )
    }
  })
})
