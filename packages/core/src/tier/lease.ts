/**
 * Owns one lease: the units a process took from the shared store for a key in one consume, how
 * long they may be spent (per algorithm), how the next lease is sized, and the decisions
 * answered from it.
 */
import { ROWS } from '../algorithms/registry'
import { Verdict } from '../decision'
import type { Policy, PolicyOutcome } from '../policy'
import { leaseMsOf, maxLeaseOf, type TierSettings } from './options'

/** The leases of one key under one set of policies (and rule keys) in this process. */
export class LeaseEntry {
  /** Units of the current lease not yet spent. */
  held = 0
  /** Units the current lease took. */
  size = 0
  /** The `now` the lease was asked at: the start of its lifetime. */
  takenAt = 0
  /** The `at` its unspent units are refunded with: when the store counted them (see start). */
  refundAt = 0
  /** refundAt is on the store's own clock, as the store reported it (StoreRefund.storeClock). */
  refundOnStoreClock = false
  /** When the lease's units may no longer be spent (the requests' clock); 0: no lease. */
  expiresAt = 0
  /** The store's outcomes of the lease's consume: what local decisions are computed from. */
  outcomes: readonly PolicyOutcome[] = []
  /** Size of the next lease: starts at 1, doubles when a lease runs out early, shrinks to what was spent when one expires. */
  nextSize = 1
  /** The store call under way for this entry; other requests wait for it. */
  pending: Promise<void> | undefined = undefined
  /** L: the largest lease, the smallest over the policies. */
  readonly maxLease: number
  /** The smallest leaseMs over the policies. */
  readonly leaseMs: number

  constructor(
    readonly key: string,
    readonly keys: readonly string[] | undefined,
    readonly policies: readonly Policy[],
    settings: TierSettings,
  ) {
    let maxLease = Infinity
    let leaseMs = Infinity
    for (const policy of policies) {
      maxLease = Math.min(maxLease, maxLeaseOf(settings, policy))
      leaseMs = Math.min(leaseMs, leaseMsOf(settings, policy))
    }
    this.maxLease = maxLease
    this.leaseMs = leaseMs
  }

  /**
   * Starts a lease of `size` units, asked at `sent` and granted with `outcomes` by `answered`.
   * A store on the requests' clock counted it at `sent`. One on a clock of its own (Redis
   * `TIME`) says when it counted (`chargedAt`, StoreResult.at), and the refund goes exactly
   * there; if it does not say, it counted somewhere between `sent` and `answered`, and its
   * refund must land in that same window or bucket: `answered`, or just before the window's
   * end if the answer came later.
   */
  start(
    size: number,
    spent: number,
    sent: number,
    answered: number,
    ownClock: boolean,
    outcomes: readonly PolicyOutcome[],
    chargedAt: number | undefined,
  ): void {
    const windowLeft = untilWindowEnd(this.policies, outcomes)
    this.size = size
    this.held = size - spent
    this.takenAt = sent
    this.refundOnStoreClock = chargedAt !== undefined
    this.refundAt =
      chargedAt ?? (ownClock ? Math.max(sent, Math.min(answered, sent + windowLeft - 1)) : sent)
    this.outcomes = outcomes
    this.expiresAt = sent + Math.max(0, Math.min(this.leaseMs, windowLeft))
  }

  /**
   * Ends the current lease at `now` and sizes the next one; returns the unspent units, which
   * the caller refunds. Run out before its end: the next is twice as large (up to L). Expired
   * with units left: the next is what this one spent.
   */
  end(now: number): number {
    const unspent = this.held
    if (this.expiresAt === 0) return unspent
    if (now < this.expiresAt) this.nextSize = Math.min(this.maxLease, this.size * 2)
    else this.nextSize = Math.max(1, this.size - unspent)
    this.held = 0
    this.expiresAt = 0
    return unspent
  }

  /** Forgets the lease without a refund (the store forgot the key); the next starts at 1. */
  drop(): void {
    this.held = 0
    this.expiresAt = 0
    this.nextSize = 1
  }

  /** Whether `cost` units can be spent from the lease at `now`. */
  covers(cost: number, now: number): boolean {
    return this.held >= cost && now < this.expiresAt
  }
}

/**
 * ms from when the store decided until the end of the fixed-window window or sliding-window
 * bucket the lease was counted in (Infinity for the other algorithms): no unit may be spent in
 * a window it was not counted in. Read from the outcomes' resetMs, relative to when the store
 * decided, which is after the lease was asked: added to the asking time, the end is never
 * late, whatever the store's clock.
 */
function untilWindowEnd(policies: readonly Policy[], outcomes: readonly PolicyOutcome[]): number {
  let ms = Infinity
  for (let i = 0; i < policies.length; i++) {
    const policy = policies[i]
    const resetMs = outcomes[i].resetMs
    const boundary = ROWS[policy.algorithm].leaseBoundary
    if (boundary === 'window') ms = Math.min(ms, resetMs)
    else if (boundary === 'bucket') {
      // An admitted request's reset is when its bucket's count begins to fade: precision - 1
      // buckets after the bucket's end.
      const laterBuckets = ((policy.precision - 1) * policy.windowMs) / policy.precision
      ms = Math.min(ms, Math.floor(resetMs - laterBuckets))
    }
  }
  return ms
}

/**
 * The outcomes of a request answered from the lease at `now`: admitted; `remaining` is what
 * the store had left after the lease plus what the lease still holds; `resetMs` the store's,
 * counted down since the lease.
 */
export function leasedOutcomes(
  entry: LeaseEntry,
  policies: readonly Policy[],
  now: number,
): PolicyOutcome[] {
  const elapsed = now - entry.takenAt
  const outcomes: PolicyOutcome[] = new Array(policies.length)
  for (let i = 0; i < policies.length; i++) {
    const policy = policies[i]
    const granted = entry.outcomes[i]
    const verdict = new Verdict(policy, now)
    verdict.allowed = true
    verdict.remaining = Math.min(policy.burst, granted.remaining + entry.held)
    verdict.resetMs = Math.max(0, granted.resetMs - elapsed)
    outcomes[i] = verdict
  }
  return outcomes
}
