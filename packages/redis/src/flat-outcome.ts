/**
 * Owns reading the flat replies of the single-policy scripts into policy outcomes.
 */
import {
  algorithmOf,
  isWide,
  ROWS,
  type Policy,
  type PolicyOutcome,
  type ReplyShape,
} from '@sluice/core/web'

/**
 * The outcome of a script's reply for one policy (see lua/flat/), computed by the policy's own
 * algorithm's `decide` on a state rebuilt from the reply, so the fields are core's formulas by
 * construction (the script only tests admission, the same test as core's). By the reply's
 * shape (the registry's `reply`):
 *
 * - backlog (the meters): the reply is the backlog drained to now; the algorithm's
 *   `atBacklog` is the state holding that backlog at time 0, decided at 0. A wide policy's
 *   (the wide script, lua/wide.ts) is the backlog as an integer below 2^52, or past it its
 *   five limbs of 24 bits, lowest first; its row's `wideLua.atBacklog` is the wide state
 *   holding it.
 * - window (fixed-window): the reply is `count * (windowMs + 1) + msToNextWindow` (1..windowMs). A
 *   window starting at 0 holding `count`, seen at `windowMs - msToNextWindow`, decides the same.
 *   An admitted consume on Redis's clock replies `[that, now]` (when it was counted).
 * - sliding-window: the reply is the script's `now`, the newest bucket, then slot and counter
 *   of each non-zero counter of the ring (the hash as read, as integers): the state vector.
 * - sliding-log: the reply is `[live, newest - now, mustExpire - now, now]`: all that decide
 *   reads of the log, and the script's `now` (when a consume was logged). A log of `live` timestamps, all live, whose 1st and last are the newest and
 *   whose (live + cost - limit)-th is mustExpire, seen at 0, decides the same (decide reads
 *   the oldest to find the first live one, the newest, and that one).
 * - any: a negative integer reply is a block, -reply ms long (see store.block).
 *
 * Returns undefined for a reply of the wrong shape.
 */
const state = [0, 0]
/** The sliding-window state vector, reused: decide runs synchronously. */
const ring: number[] = []

export function flatOutcome(
  kind: ReplyShape,
  reply: unknown,
  policy: Policy,
  cost: number,
  maxDelayMs: number | undefined,
): PolicyOutcome | undefined {
  const out: PolicyOutcome = {
    allowed: false,
    remaining: 0,
    resetMs: 0,
    retryAfterMs: 0,
    delayMs: 0,
  }
  if (typeof reply !== 'number') {
    if (!Array.isArray(reply)) return undefined
    if (kind === 'backlog') return wideMeter(reply, policy, cost, maxDelayMs, out)
    if (kind === 'ring') return slidingWindow(reply, policy, cost, out)
    if (kind === 'log') return slidingLog(reply, policy, cost, out)
    // An admitted fixed-window consume on Redis's clock: [reply, when it was counted].
    if (kind === 'window' && reply.length === 2 && typeof reply[0] === 'number' && reply[0] >= 0) {
      return flatOutcome(kind, reply[0], policy, cost, maxDelayMs)
    }
    return undefined
  }
  if (kind === 'ring' || kind === 'log') {
    if (reply >= 0) return undefined
  }
  if (reply < 0) {
    // The key is blocked for -reply ms (store.block).
    out.resetMs = -reply
    out.retryAfterMs = -reply
    return out
  }
  if (kind === 'backlog' && isWide(policy)) {
    if (!Number.isSafeInteger(reply)) return undefined
    return decideWide(BigInt(reply), policy, cost, maxDelayMs, out)
  }
  if (kind === 'window') {
    const span = policy.windowMs + 1
    const count = Math.floor(reply / span)
    const untilNext = reply - count * span
    state[0] = 0
    state[1] = count
    // Either anchor reads this state as the same count and wait (see FW_REPLY).
    algorithmOf(policy).decide(state, 0, policy.windowMs - untilNext, policy, cost, out)
  } else {
    const atBacklog = ROWS[policy.algorithm].atBacklog
    if (atBacklog === undefined) return undefined
    atBacklog(state, reply, policy)
    algorithmOf(policy).decide(state, 0, 0, policy, cost, out, maxDelayMs)
  }
  return out
}

function slidingWindow(
  reply: unknown[],
  policy: Policy,
  cost: number,
  out: PolicyOutcome,
): PolicyOutcome | undefined {
  const now = reply[0]
  if (typeof now !== 'number' || reply.length % 2 !== 0) return undefined
  const slots = policy.precision + 2
  // A plain loop: fill() on this array took V8's slow C++ path, a visible share of a decision.
  for (let i = ring.length; i < slots; i++) ring.push(0)
  for (let i = 0; i < slots; i++) ring[i] = 0
  ring[0] = reply[1] as number
  for (let i = 2; i < reply.length; i += 2) {
    const slot = reply[i] as number
    if (slot >= 0 && slot <= policy.precision) ring[1 + slot] = reply[i + 1] as number
  }
  algorithmOf(policy).decide(ring, 0, now, policy, cost, out)
  return out
}

function slidingLog(
  reply: unknown[],
  policy: Policy,
  cost: number,
  out: PolicyOutcome,
): PolicyOutcome | undefined {
  if (reply.length !== 4) return undefined
  const [live, newest, mustExpire] = reply as number[]
  // Core's state layout (count, head, ring size, then the timestamps oldest first), holding just
  // the timestamps decide reads. Every one is live, so the oldest may stand in as the newest.
  const log: { [index: number]: number; length: number } = {
    length: live + 3,
    0: live,
    1: 0,
    2: live,
  }
  if (live > 0) {
    log[3] = newest
    const k = live + cost - policy.limit
    if (k >= 1 && k <= live) log[2 + k] = mustExpire
    log[2 + live] = newest
  }
  algorithmOf(policy).decide(log, 0, 0, policy, cost, out)
  return out
}

/** A wide meter's state vector, reused: decide runs synchronously. */
const wideState = [0, 0, 0]

/** A wide meter's reply past 2^52: the backlog's limbs (core's limbs.lua.ts), read as a BigInt. */
function wideMeter(
  reply: unknown[],
  policy: Policy,
  cost: number,
  maxDelayMs: number | undefined,
  out: PolicyOutcome,
): PolicyOutcome | undefined {
  if (reply.length !== 5) return undefined
  let backlog = 0n
  for (let i = 4; i >= 0; i--) {
    const limb = reply[i]
    if (typeof limb !== 'number' || !Number.isSafeInteger(limb)) return undefined
    backlog = (backlog << 24n) + BigInt(limb)
  }
  return decideWide(backlog, policy, cost, maxDelayMs, out)
}

/** A wide meter's outcome at `backlog`: its row's wide state holding it, decided at 0. */
function decideWide(
  backlog: bigint,
  policy: Policy,
  cost: number,
  maxDelayMs: number | undefined,
  out: PolicyOutcome,
): PolicyOutcome | undefined {
  const wide = ROWS[policy.algorithm].wideLua
  if (wide === undefined) return undefined
  wide.atBacklog(wideState, backlog, policy)
  algorithmOf(policy).decide(wideState, 0, 0, policy, cost, out, maxDelayMs)
  return out
}
