import { algorithms, type Policy, type PolicyOutcome } from '@sluice/core'

/**
 * The outcome of a flat script's one-integer reply (see lua/flat.ts), computed by core's own
 * `decide` on a state rebuilt from the reply, so the fields are core's formulas by
 * construction (the script only tests admission, the same test as core's).
 *
 * - gcra, token-bucket, leaky-bucket: the reply is the backlog drained to now. A bucket
 *   whose level is that backlog, refilled at now (0), decides the same: gcra and
 *   token-bucket share decideMeter without shaping, leaky-bucket with it.
 * - fixed-window: the reply is `count * (windowMs + 1) + msToNextWindow` (1..windowMs). A
 *   window starting at 0 holding `count`, seen at `windowMs - msToNextWindow`, decides the same.
 * - any: a negative reply is a block, -reply ms long (see store.block).
 */
export type FlatKind = 'meter' | 'shaping' | 'fw'

const state = [0, 0]

export function flatOutcome(
  kind: FlatKind,
  reply: number,
  policy: Policy,
  cost: number,
  maxDelayMs: number | undefined,
): PolicyOutcome {
  const out: PolicyOutcome = {
    allowed: false,
    remaining: 0,
    resetMs: 0,
    retryAfterMs: 0,
    delayMs: 0,
  }
  if (reply < 0) {
    // The key is blocked for -reply ms (store.block).
    out.resetMs = -reply
    out.retryAfterMs = -reply
    return out
  }
  if (kind === 'fw') {
    const span = policy.windowMs + 1
    const count = Math.floor(reply / span)
    const untilNext = reply - count * span
    state[0] = 0
    state[1] = count
    algorithms['fixed-window'].decide(state, 0, policy.windowMs - untilNext, policy, cost, out)
  } else {
    state[0] = reply
    state[1] = 0
    const algorithm = kind === 'shaping' ? algorithms['leaky-bucket'] : algorithms['token-bucket']
    algorithm.decide(state, 0, 0, policy, cost, out, maxDelayMs)
  }
  return out
}
