/**
 * Owns the decisions the pipeline makes of a limiter's: a refusal whose wait a backoff
 * lengthened, and the refusal of a per-request limit of 0 (nothing counted).
 */
import type { Decision, Policy } from '@sluice/core/web'
import type { HttpLimitOptions } from './types'

/** How long the key is held out after its `refusals`-th rejection in a row. */
export function backoffMs(
  mode: NonNullable<HttpLimitOptions['backoff']>,
  windowMs: number,
  refusals: number,
): number {
  if (mode === 'restart') return windowMs
  return Math.min(windowMs * 2 ** (refusals - 1), Number.MAX_SAFE_INTEGER)
}

/** The refusal `decision` with the key held out for `ms` from its instant. */
export function waitingFor(decision: Decision, ms: number): Decision {
  const longer = <T extends { resetMs: number }>(outcome: T) => ({
    ...outcome,
    resetMs: Math.max(outcome.resetMs, ms),
    retryAfterMs: ms,
  })
  return {
    ...longer({
      allowed: false,
      limit: decision.limit,
      remaining: 0,
      resetMs: decision.resetMs,
      delayMs: 0,
      policy: decision.policy,
      degraded: decision.degraded,
      at: decision.at,
    }),
    policies: decision.policies.map((outcome) =>
      outcome.policy === decision.policy ? longer(outcome) : outcome,
    ),
  }
}

/** A limit of 0: the request is refused for a whole window, and nothing is counted. */
export function nothingPasses(policy: Policy, at: number): Decision {
  const outcome = {
    allowed: false,
    remaining: 0,
    resetMs: policy.windowMs,
    retryAfterMs: policy.windowMs,
    delayMs: 0,
  }
  return { ...outcome, limit: 0, policy, policies: [{ ...outcome, policy }], degraded: false, at }
}
