/**
 * Owns reading the scripts' replies: the flat scripts' integers through core's formulas
 * (flat-outcome.ts), the generic scripts' five integers per policy.
 */
import type { Policy, PolicyOutcome, StoreRequest, StoreResult } from '@sluice/core'
import { flatOutcome, type FlatKind } from './flat-outcome'
import { describeValue } from './keys'
import type { Plan } from './plan'

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

/**
 * A generic script's reply: one reply per policy, each as its flat script's (see driver.ts),
 * read with core's formulas; throws on a malformed one.
 */
export function parseOutcomes(reply: unknown, plan: Plan, request: StoreRequest): PolicyOutcome[] {
  const n = plan.policies.length
  if (!Array.isArray(reply) || reply.length !== n) {
    throw new Error(`unexpected reply from the sluice script: ${describeValue(reply)}`)
  }
  const outcomes: PolicyOutcome[] = new Array(n)
  for (let i = 0; i < n; i++) {
    outcomes[i] = flatReply(plan.kinds[i], reply[i], plan.policies[i], request)
  }
  return outcomes
}
