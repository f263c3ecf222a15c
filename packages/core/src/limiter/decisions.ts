/**
 * Owns turning store outcomes into a Decision: the binding policy of several, the degraded
 * decision `onStoreError` answers with, and the admitting decision a shadow limiter returns.
 */
import { Verdict, type Decision, type PolicyDecision } from '../decision'
import type { Policy, PolicyOutcome } from '../policy'

/** Retry-After suggested by `onStoreError: 'deny'`: short, so clients come back when the store may be. */
const DENY_RETRY_MS = 1000

/** Index of the policy that decides: the longest wait when rejected, else the fewest remaining. */
function bindingIndex(outcomes: readonly PolicyOutcome[], allowed: boolean): number {
  let best = 0
  for (let i = 1; i < outcomes.length; i++) {
    const o = outcomes[i]
    const b = outcomes[best]
    if (allowed) {
      if (o.remaining < b.remaining || (o.remaining === b.remaining && o.resetMs > b.resetMs))
        best = i
    } else if (!o.allowed && (b.allowed || o.retryAfterMs > b.retryAfterMs)) {
      best = i
    }
  }
  return best
}

/** Capacity of a policy as its outcome's `remaining` counts it. */
function capacity(policy: Policy): number {
  return policy.burst
}

/**
 * Builds the Decision from the store's outcomes. `applied` are the (possibly scaled) policies
 * the store used; `nominal` the ones headers announce: `remaining` is reported against the
 * nominal capacity, so a soft or elastic allowance never shows as extra quota.
 */
export function combineOutcomes(
  nominal: readonly Policy[],
  applied: readonly Policy[],
  outcomes: readonly PolicyOutcome[],
  cost: number,
  at: number,
): Decision {
  if (outcomes.length === 1 && applied === nominal)
    return singleDecision(nominal[0], outcomes[0], at)
  let allowed = true
  let delayMs = 0
  for (const outcome of outcomes) if (!outcome.allowed) allowed = false
  const policies: PolicyDecision[] = new Array(outcomes.length)
  for (let i = 0; i < outcomes.length; i++) {
    const o = outcomes[i]
    const policy = nominal[i]
    const allowance = capacity(applied[i]) - capacity(policy)
    // A policy that would have admitted a request another rejected took nothing from it.
    const left = !allowed && o.allowed ? o.remaining + cost : o.remaining
    const remaining = allowance > 0 ? Math.max(0, left - allowance) : left
    if (o.delayMs > delayMs) delayMs = o.delayMs
    policies[i] = {
      policy,
      allowed: o.allowed,
      remaining,
      resetMs: o.resetMs,
      retryAfterMs: o.retryAfterMs,
      delayMs: o.delayMs,
    }
  }
  const binding = policies[bindingIndex(policies, allowed)]
  return {
    allowed,
    limit: binding.policy.limit,
    remaining: binding.remaining,
    resetMs: binding.resetMs,
    retryAfterMs: allowed ? 0 : binding.retryAfterMs,
    delayMs: allowed ? delayMs : 0,
    policy: binding.policy,
    policies,
    degraded: false,
    at,
  }
}

/** The common case, one policy at its nominal limit: the store's outcome serves as the PolicyDecision. */
function singleDecision(policy: Policy, outcome: PolicyOutcome, at: number): Decision {
  if (outcome instanceof Verdict && outcome.policy === policy) {
    outcome.at = at
    return outcome
  }
  const verdict = new Verdict(policy)
  verdict.at = at
  verdict.allowed = outcome.allowed
  verdict.remaining = outcome.remaining
  verdict.resetMs = outcome.resetMs
  verdict.retryAfterMs = outcome.retryAfterMs
  verdict.delayMs = outcome.delayMs
  return verdict
}

/** A decision made without the store (`onStoreError: 'allow' | 'deny'`). */
export function degradedDecision(
  policies: readonly Policy[],
  allowed: boolean,
  at: number,
): Decision {
  const policy = policies[0]
  const retryAfterMs = allowed ? 0 : DENY_RETRY_MS
  const remaining = allowed ? policy.limit : 0
  return {
    allowed,
    limit: policy.limit,
    remaining,
    resetMs: retryAfterMs,
    retryAfterMs,
    delayMs: 0,
    policy,
    policies: policies.map((p) => ({
      policy: p,
      allowed,
      remaining: allowed ? p.limit : 0,
      resetMs: retryAfterMs,
      retryAfterMs,
      delayMs: 0,
    })),
    degraded: true,
    at,
  }
}

/** The decision a shadow limiter returns: it admits, and `shadow` keeps what enforcing would have said. */
export function shadowDecision(decision: Decision): Decision {
  return {
    allowed: true,
    limit: decision.limit,
    remaining: decision.remaining,
    resetMs: decision.resetMs,
    retryAfterMs: 0,
    delayMs: 0,
    policy: decision.policy,
    // Read explicitly: a Verdict derives `policies` through a getter, which a spread would drop.
    policies: decision.policies,
    degraded: decision.degraded,
    at: decision.at,
    shadow: {
      allowed: decision.allowed,
      retryAfterMs: decision.retryAfterMs,
      delayMs: decision.delayMs,
    },
  }
}
