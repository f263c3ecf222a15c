/**
 * Owns reading the scripts' replies: the flat scripts' integers through core's formulas
 * (flat-outcome.ts), the generic scripts' five integers per policy.
 */
import type { Policy, PolicyOutcome, StoreRequest, StoreResult } from '@sluice/core'
import type { ReplyShape } from '@sluice/core/web'
import { flatOutcome } from './flat-outcome'
import { describeValue } from './keys'
import type { Plan } from './plan'

/**
 * When Redis decided a consume, by its outcomes, for the stores on its clock (time: 'server'):
 * read from the replies that carry the script's `now` (sliding-window, sliding-log), or from
 * compare-and-set's read. A charge is refunded exactly there (StoreResult.at).
 */
const decidedAt = new WeakMap<readonly PolicyOutcome[], number>()

/** Remembers that `outcomes` were decided at `now` on Redis's clock. */
export function decidedOn(outcomes: PolicyOutcome[], now: number | undefined): PolicyOutcome[] {
  if (now !== undefined) decidedAt.set(outcomes, now)
  return outcomes
}

/**
 * The script's `now` where its reply carries it: sliding-window's first integer, sliding-log's
 * fourth, an admitted fixed-window's second (with server time).
 */
function replyNow(kind: ReplyShape, reply: unknown): number | undefined {
  if (!Array.isArray(reply)) return undefined
  const now: unknown =
    kind === 'ring'
      ? reply[0]
      : kind === 'log'
        ? reply[3]
        : kind === 'window'
          ? reply[1]
          : undefined
  return typeof now === 'number' ? now : undefined
}

/** The outcomes as a StoreResult, with when Redis counted them where it is known. */
export function asResult(outcomes: PolicyOutcome[]): StoreResult {
  const at = decidedAt.get(outcomes)
  return at === undefined ? { outcomes } : { outcomes, at }
}

/** A flat script's reply as the outcomes of its one policy; `timed`: remember when Redis decided. */
export function flatOutcomes(
  kind: ReplyShape,
  reply: unknown,
  policy: Policy,
  request: StoreRequest,
  timed: boolean,
): PolicyOutcome[] {
  const outcomes = [flatReply(kind, reply, policy, request)]
  return timed ? decidedOn(outcomes, replyNow(kind, reply)) : outcomes
}

/** The outcome of a flat script's reply (see flat-outcome.ts); throws on a malformed one. */
export function flatReply(
  kind: ReplyShape,
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
export function parseOutcomes(
  reply: unknown,
  plan: Plan,
  request: StoreRequest,
  timed: boolean,
): PolicyOutcome[] {
  const n = plan.policies.length
  // An admitted consume on Redis's clock ends with the time it was counted at (driver.ts).
  const counted = Array.isArray(reply) && reply.length === n + 1 ? reply[n] : undefined
  if (!Array.isArray(reply) || (reply.length !== n && typeof counted !== 'number')) {
    throw new Error(`unexpected reply from the sluice script: ${describeValue(reply)}`)
  }
  const outcomes: PolicyOutcome[] = new Array(n)
  for (let i = 0; i < n; i++) {
    outcomes[i] = flatReply(plan.kinds[i], reply[i], plan.policies[i], request)
  }
  if (timed) {
    if (typeof counted === 'number') return decidedOn(outcomes, counted)
    // Every policy of one call is decided at the one `now`: the first reply that tells it.
    for (let i = 0; i < n; i++) {
      const now = replyNow(plan.kinds[i], reply[i])
      if (now !== undefined) return decidedOn(outcomes, now)
    }
  }
  return outcomes
}
