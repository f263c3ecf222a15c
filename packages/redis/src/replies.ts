/**
 * Owns reading the scripts' replies: the flat scripts' integers through core's formulas
 * (flat-outcome.ts), the generic scripts' five integers per policy.
 */
import type { Policy, PolicyOutcome, StoreRequest, StoreResult } from '@sluice/core'
import { flatOutcome, type FlatKind } from './flat-outcome'
import { describeValue } from './keys'

export function asResult(outcomes: PolicyOutcome[]): StoreResult {
  return { outcomes }
}

/** The outcome of a flat script's reply (see flat-outcome.ts); throws on a malformed one. */
export function flatReply(
  kind: FlatKind,
  reply: unknown,
  policy: Policy,
  request: StoreRequest,
): PolicyOutcome {
  const outcome = flatOutcome(kind, reply, policy, request.cost, request.maxDelayMs)
  if (outcome === undefined) {
    throw new Error(`unexpected reply from the sluice script: ${describeValue(reply)}`)
  }
  return outcome
}

/** Five integers per policy, as the scripts return them; -1 retryAfterMs is Infinity. */
export function parseOutcomes(reply: unknown, n: number): PolicyOutcome[] {
  if (!Array.isArray(reply) || reply.length !== n * 5) {
    throw new Error(`unexpected reply from the sluice script: ${describeValue(reply)}`)
  }
  const outcomes: PolicyOutcome[] = new Array(n)
  for (let i = 0; i < n; i++) {
    const r = reply as number[]
    const retry = r[i * 5 + 3]
    outcomes[i] = {
      allowed: r[i * 5] === 1,
      remaining: r[i * 5 + 1],
      resetMs: r[i * 5 + 2],
      retryAfterMs: retry === -1 ? Infinity : retry,
      delayMs: r[i * 5 + 4],
    }
  }
  return outcomes
}
