/**
 * Owns the conformance suite's reference: core's pure transitions on plain arrays as a store
 * must apply them, and the random limits, steps and costs the traces are made of.
 */
import {
  type AlgorithmName,
  type LimitOptions,
  type Policy,
  type PolicyOutcome,
} from '@sluice/core'
import { algorithmOf, ROWS } from '@sluice/core/adapter'
import fc from 'fast-check'

/** The five fields of the contract (stores may return richer objects, e.g. core's Verdict). */
export function plain(outcomes: readonly PolicyOutcome[]): PolicyOutcome[] {
  return outcomes.map(({ allowed, remaining, resetMs, retryAfterMs, delayMs }) => ({
    allowed,
    remaining,
    resetMs,
    retryAfterMs,
    delayMs,
  }))
}

/** The empty outcome, filled by `decide`. */
export function blankOutcome(): PolicyOutcome {
  return { allowed: false, remaining: 0, resetMs: 0, retryAfterMs: 0, delayMs: 0 }
}

/**
 * The reference: one key's state for each policy as a plain array, driven by core's pure
 * transitions exactly as a store must behave (decide every policy; apply to all only when all
 * admit; refund only state that exists; reset forgets it).
 */
export class ReferenceModel {
  private readonly states = new Map<string, number[]>()

  constructor(private readonly policies: readonly Policy[]) {}

  consume(now: number, cost: number, maxDelayMs?: number): PolicyOutcome[] {
    const outcomes = this.decide(now, cost, maxDelayMs)
    if (cost > 0 && outcomes.every((o) => o.allowed)) {
      for (const policy of this.policies) {
        algorithmOf(policy).apply(this.state(policy), 0, now, policy, cost)
      }
    }
    return outcomes
  }

  peek(now: number, cost: number): PolicyOutcome[] {
    return this.decide(now, cost)
  }

  /** `at` undefined: a reward. */
  refund(now: number, cost: number, at?: number): void {
    for (const policy of this.policies) {
      const state = this.states.get(policy.id)
      if (state !== undefined) algorithmOf(policy).refund(state, 0, now, policy, cost, at)
    }
  }

  penalize(now: number, cost: number): void {
    for (const policy of this.policies) {
      algorithmOf(policy).penalize(this.state(policy), 0, now, policy, cost)
    }
  }

  reset(): void {
    this.states.clear()
  }

  /** The states, as text: two models that print the same decide the same from here on. */
  snapshot(): string {
    return JSON.stringify([...this.states].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
  }

  /** An independent copy: the same policies and states (to try a step at several times). */
  clone(): ReferenceModel {
    const copy = new ReferenceModel(this.policies)
    for (const [id, state] of this.states) copy.states.set(id, state.slice())
    return copy
  }

  private decide(now: number, cost: number, maxDelayMs?: number): PolicyOutcome[] {
    return this.policies.map((policy) => {
      const out = blankOutcome()
      algorithmOf(policy).decide(this.state(policy), 0, now, policy, cost, out, maxDelayMs)
      return out
    })
  }

  private state(policy: Policy): number[] {
    let state = this.states.get(policy.id)
    if (state === undefined) {
      state = new Array<number>(algorithmOf(policy).slots(policy)).fill(0)
      this.states.set(policy.id, state)
    }
    return state
  }
}

export type Step =
  | { readonly op: 'consume'; readonly dt: number; readonly cost: number }
  | { readonly op: 'wait'; readonly dt: number; readonly cost: number; readonly maxDelayMs: number }
  | { readonly op: 'penalize'; readonly dt: number; readonly cost: number }
  | { readonly op: 'reward'; readonly dt: number; readonly cost: number }
  | { readonly op: 'peek'; readonly dt: number; readonly cost: number }
  | { readonly op: 'refund'; readonly dt: number; readonly cost: number; readonly pick: number }
  | { readonly op: 'reset'; readonly dt: number }

/** A limit small enough that traces reach and leave it often. */
export function limitArbitrary(algorithm: AlgorithmName): fc.Arbitrary<LimitOptions> {
  // Each option the algorithm takes (the registry's `takes`), and no other.
  const takes: readonly string[] = ROWS[algorithm].takes
  return fc
    .record({
      limit: fc.integer({ min: 1, max: 8 }),
      precision: fc.integer({ min: 1, max: 4 }),
      unit: fc.constantFrom(1, 7, 250, 1000, 15_000),
      burst: fc.integer({ min: 1, max: 10 }),
      anchor: fc.constantFrom('clock' as const, 'first-request' as const),
    })
    .map(({ limit, precision, unit, burst, anchor }) => {
      const window = unit * (takes.includes('precision') ? precision : 4)
      const options: LimitOptions = { algorithm, limit, window }
      if (takes.includes('precision')) return { ...options, precision }
      if (takes.includes('anchor')) return { ...options, anchor }
      return takes.includes('burst') ? { ...options, burst } : options
    })
}

export function stepArbitrary(
  maxDt: number,
  extra: { penalize: boolean; reservations: boolean } = { penalize: false, reservations: false },
): fc.Arbitrary<Step> {
  const dt = fc.oneof(fc.constant(0), fc.integer({ min: 0, max: maxDt }))
  const more: { weight: number; arbitrary: fc.Arbitrary<Step> }[] = []
  if (extra.penalize) {
    more.push(
      {
        weight: 1,
        arbitrary: fc.record({
          op: fc.constant('penalize' as const),
          dt,
          cost: fc.integer({ min: 1, max: 12 }),
        }),
      },
      {
        weight: 1,
        arbitrary: fc.record({
          op: fc.constant('reward' as const),
          dt,
          cost: fc.integer({ min: 1, max: 12 }),
        }),
      },
    )
  }
  if (extra.reservations) {
    more.push({
      weight: 3,
      arbitrary: fc.record({
        op: fc.constant('wait' as const),
        dt,
        cost: costs,
        maxDelayMs: fc.integer({ min: 1, max: 2 * maxDt }),
      }),
    })
  }
  return fc.oneof(
    ...more,
    { weight: 8, arbitrary: fc.record({ op: fc.constant('consume' as const), dt, cost: costs }) },
    { weight: 2, arbitrary: fc.record({ op: fc.constant('peek' as const), dt, cost: peekCosts }) },
    {
      weight: 2,
      arbitrary: fc.record({
        op: fc.constant('refund' as const),
        dt,
        cost: fc.integer({ min: 1, max: 3 }),
        pick: fc.nat(),
      }),
    },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('reset' as const), dt }) },
  )
}

// Mostly 1 (the common case, and the one a block cache answers), sometimes heavier, sometimes
// more than any capacity in the traces (retryAfterMs Infinity).
export const costs = fc.oneof(
  { weight: 6, arbitrary: fc.constant(1) },
  { weight: 3, arbitrary: fc.integer({ min: 2, max: 4 }) },
  { weight: 1, arbitrary: fc.constant(11) },
)
export const peekCosts = fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 3 }))
