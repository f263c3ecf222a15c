/**
 * Owns reading the scripts' replies: the flat scripts' integers through core's formulas
 * (flat-outcome.ts), the generic scripts' five integers per policy.
 */
import type { Policy, PolicyOutcome, StoreRequest, StoreResult } from '@sluice/core'
import type { ReplyShape } from '@sluice/core/web'
import { flatOutcome } from './flat-outcome'
import { describeValue } from './keys'
import type { Plan } from './plan'

/** Outcomes and, where known, when Redis counted them (StoreResult.at; time: 'server'). */
export function resultOf(outcomes: PolicyOutcome[], at: number | undefined): StoreResult {
  return at === undefined ? { outcomes } : { outcomes, at }
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

/**
 * A flat script's reply as the outcome of its one policy; `timed` (Redis's clock): with when
 * Redis decided, `at` (a batch's, once for all its decisions) or where the reply tells it.
 */
export function flatOutcomes(
  kind: ReplyShape,
  reply: unknown,
  policy: Policy,
  request: StoreRequest,
  timed: boolean,
  at?: number,
): StoreResult {
  const outcomes = [flatReply(kind, reply, policy, request)]
  return timed ? resultOf(outcomes, at ?? replyNow(kind, reply)) : { outcomes }
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
): StoreResult {
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
    if (typeof counted === 'number') return { outcomes, at: counted }
    // Every policy of one call is decided at the one `now`: the first reply that tells it.
    for (let i = 0; i < n; i++) {
      const now = replyNow(plan.kinds[i], reply[i])
      if (now !== undefined) return { outcomes, at: now }
    }
  }
  return { outcomes }
}

/**
 * A batch of several policies' replies (FLAT_OUT in lua/flat/several.ts), one flat array,
 * as one reply per decision: an array of its policies' replies (and the time it was counted
 * at), or its error. Throws on a malformed reply.
 */
export function severalReplies(reply: unknown, decisions: number, policies: number): unknown[] {
  const malformed = (): Error =>
    new Error(`unexpected reply from the sluice script: ${describeValue(reply)}`)
  if (!Array.isArray(reply)) throw malformed()
  const items = reply as unknown[]
  const out: unknown[] = new Array(decisions)
  let at = 0
  for (let i = 0; i < decisions; i++) {
    const head = items[at++]
    // A failed decision: an error, or its text where the client passes errors inside a reply
    // on as text (Upstash's REST API: client/upstash.ts).
    if (head instanceof Error || typeof head === 'string') {
      out[i] = head instanceof Error ? head : new Error(head)
      continue
    }
    if (typeof head !== 'number' || head < 0 || head >= 2 ** (policies + 1)) throw malformed()
    const count = head >= 2 ** policies ? policies + 1 : policies
    const replies: unknown[] = new Array(count)
    for (let j = 0; j < count; j++) {
      if (j === policies || (head & (1 << j)) === 0) {
        replies[j] = items[at++]
        continue
      }
      const length = items[at++]
      if (typeof length !== 'number' || length < 0) throw malformed()
      replies[j] = items.slice(at, at + length)
      at += length
    }
    out[i] = replies
  }
  if (at !== items.length) throw malformed()
  return out
}
