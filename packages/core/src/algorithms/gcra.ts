/**
 * Owns GCRA (the generic cell rate algorithm): one theoretical arrival time per key, a meter.
 */
import type { Algorithm, PolicyNumbers, StateVector } from './types'
import { decideMeter, penalized, wideMeter } from './meter'

/*
 * Generic cell rate algorithm: one theoretical arrival time (TAT) per key. A request may pass
 * when TAT - now leaves room for its cost within the burst tolerance; passing moves TAT on by
 * cost x window / limit. The TAT is kept as whole ms plus a remainder in 1/limit ms, so an
 * emission interval such as 1000/3 ms adds up exactly. State: [tatMs, tatRemainder].
 */

function backlog(s: StateVector, b: number, now: number, policy: PolicyNumbers): number {
  const ahead = (s[b] - now) * policy.limit + s[b + 1]
  return ahead > 0 ? ahead : 0
}

function setTat(
  s: StateVector,
  b: number,
  now: number,
  policy: PolicyNumbers,
  backlogAfter: number,
): void {
  if (backlogAfter <= 0) {
    s[b] = 0
    s[b + 1] = 0
    return
  }
  // One division for both parts: whole ms ahead of now, and the remainder in 1/limit ms.
  const wholeMs = Math.floor(backlogAfter / policy.limit)
  s[b] = now + wholeMs
  s[b + 1] = backlogAfter - wholeMs * policy.limit
}

/**
 * When a TAT state is empty again: its TAT, rounded up to whole ms; 0 when it is empty. A TAT
 * of 0 ms with a remainder is not empty (a penalty at time 0 makes one).
 */
function tatExpiry(s: StateVector, b: number): number {
  if (s[b] <= 0 && s[b + 1] <= 0) return 0
  return s[b] + (s[b + 1] > 0 ? 1 : 0)
}

/** The state whose backlog at time 0 is `backlog`: how RedisStore reads its scripts' reply. */
export function gcraAtBacklog(s: StateVector, backlog: number, policy: PolicyNumbers): void {
  setTat(s, 0, 0, policy, backlog)
}

export const gcra: Algorithm = {
  slots: () => 2,
  decide(s, b, now, policy, cost, out, maxDelayMs) {
    decideMeter(backlog(s, b, now, policy), policy, cost, out, false, maxDelayMs)
  },
  consume(s, b, now, policy, cost, out, maxDelayMs) {
    const before = backlog(s, b, now, policy)
    decideMeter(before, policy, cost, out, false, maxDelayMs)
    if (out.allowed && cost !== 0) setTat(s, b, now, policy, before + cost * policy.windowMs)
  },
  apply(s, b, now, policy, cost) {
    setTat(s, b, now, policy, backlog(s, b, now, policy) + cost * policy.windowMs)
  },
  refund(s, b, now, policy, cost) {
    setTat(s, b, now, policy, backlog(s, b, now, policy) - cost * policy.windowMs)
  },
  penalize(s, b, now, policy, cost) {
    setTat(s, b, now, policy, penalized(backlog(s, b, now, policy), policy, cost))
  },
  expiresAt: tatExpiry,
}

/*
 * Wide policies (isWide): the same state, [tatMs, tatRemainder] (the remainder is below
 * `limit`), the backlog between them a BigInt.
 */

function tatBacklogWide(s: StateVector, b: number, now: number, policy: PolicyNumbers): bigint {
  const ahead = BigInt(Math.floor(s[b] - now)) * BigInt(policy.limit) + BigInt(s[b + 1])
  return ahead > 0n ? ahead : 0n
}

function setTatWide(
  s: StateVector,
  b: number,
  now: number,
  policy: PolicyNumbers,
  after: bigint,
): void {
  if (after <= 0n) {
    s[b] = 0
    s[b + 1] = 0
    return
  }
  const limit = BigInt(policy.limit)
  const wholeMs = after / limit
  s[b] = now + Number(wholeMs)
  s[b + 1] = Number(after - wholeMs * limit)
}

export const gcraWide = wideMeter(2, tatBacklogWide, setTatWide, false, tatExpiry)

/** The wide state whose backlog at time 0 is `backlog`: how RedisStore reads a wide reply. */
export function gcraWideAtBacklog(s: StateVector, backlog: bigint, policy: PolicyNumbers): void {
  setTatWide(s, 0, 0, policy, backlog)
}
