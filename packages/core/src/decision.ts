/**
 * Owns what a limiter answers: Decision, its per-policy view, and Verdict, the allocation-light
 * decision of a single policy.
 */
import type { SlotLease } from './concurrency/slots'
import type { Policy, PolicyOutcome } from './policy'

/** One policy's part of a decision, for headers that list every limit (IETF draft-8 and later). */
export interface PolicyDecision extends PolicyOutcome {
  readonly policy: Policy
}

/** The answer to one request. A rejection is `allowed: false`, never a thrown error. */
export interface Decision {
  /** Whether the request may go ahead. */
  readonly allowed: boolean
  /** The limit of the binding policy (the nominal limit, before any soft or elastic allowance). */
  readonly limit: number
  /** Whole requests still allowed now, after this one (>= 0), under the binding policy. */
  readonly remaining: number
  /**
   * ms until the binding policy's quota is fully restored; sliding-window: until its newest
   * requests begin to fade (at most one window, 0 once they fade; whole one bucket later).
   */
  readonly resetMs: number
  /** 0 when allowed; else ms until a request of this cost can pass (`Infinity` when its cost exceeds a policy's capacity). */
  readonly retryAfterMs: number
  /** leaky-bucket shaping: ms to hold the request before passing it on (0 otherwise). */
  readonly delayMs: number
  /** The binding policy: the one that rejected (longest wait), or the one with the fewest remaining. */
  readonly policy: Policy
  /** Every policy's own outcome, in the order the limits were given. */
  readonly policies: readonly PolicyDecision[]
  /** True when the store failed and `onStoreError` answered instead (`'allow'`, `'deny'` or a fallback limiter). */
  readonly degraded: boolean
  /** When the decision was made, in ms on the limiter's clock; a refund of this request passes it as `at`. */
  readonly at: number
  /**
   * Set only by a limiter created with `shadow: true`: what enforcing would have answered. The
   * decision itself then always admits (`allowed: true`, `retryAfterMs` 0, `delayMs` 0), so
   * `decision.shadow?.allowed === false` marks a request that enforcing would have rejected.
   */
  readonly shadow?: ShadowDecision
  /**
   * Set when the limiter has a `concurrency` limit and admitted the request: the slot it holds.
   * Release it when the request ends (the HTTP adapters do); a lease not released lapses after
   * `leaseMs` only if its process dies (it is renewed while the process lives).
   */
  readonly slot?: SlotLease
}

/** What a shadow limiter would have answered had it enforced its limits. */
export interface ShadowDecision {
  /** Whether enforcing would have admitted the request. */
  readonly allowed: boolean
  /** The `retryAfterMs` enforcing would have returned (0 when it would have admitted). */
  readonly retryAfterMs: number
  /** The `delayMs` enforcing would have asked for (leaky-bucket shaping; 0 otherwise). */
  readonly delayMs: number
}

/**
 * One policy's outcome that is at once a whole Decision: what a single-policy limiter returns,
 * built by the store in one allocation. `policies` is derived on access (and left out of JSON,
 * which would otherwise be circular).
 */
export class Verdict implements Decision, PolicyDecision {
  // Declared, then set in the constructor: one allocation per decision, and native class
  // fields would add an initializer call to each.
  declare allowed: boolean
  declare remaining: number
  declare resetMs: number
  declare retryAfterMs: number
  declare delayMs: number
  declare degraded: boolean
  declare at: number
  declare readonly limit: number
  declare readonly policy: Policy

  constructor(policy: Policy, at = 0) {
    this.policy = policy
    this.limit = policy.limit
    this.allowed = false
    this.remaining = 0
    this.resetMs = 0
    this.retryAfterMs = 0
    this.delayMs = 0
    this.degraded = false
    this.at = at
  }

  get policies(): readonly PolicyDecision[] {
    return [this]
  }

  toJSON(): Omit<Decision, 'policies' | 'policy'> & { policy: string } {
    const { allowed, limit, remaining, resetMs, retryAfterMs, delayMs, degraded, at } = this
    return {
      allowed,
      limit,
      remaining,
      resetMs,
      retryAfterMs,
      delayMs,
      degraded,
      at,
      policy: this.policy.name,
    }
  }
}

/** A blank outcome for `policy`: a Verdict, so a single-policy limiter can return it as the Decision. */
export function newOutcome(policy: Policy): Verdict {
  return new Verdict(policy)
}
