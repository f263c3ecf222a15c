/**
 * Owns the meters of wide policies (token-bucket, leaky-bucket, gcra whose capacity x window
 * passes 2^50, see isWide): the same decisions as meter.ts, gcra.ts and token-bucket.ts, on a
 * backlog held as a BigInt, so that they stay exact where a double would round.
 */
import { tatExpiry } from './gcra'
import { ceilDiv, floorDiv } from './exact'
import {
  rejectForever,
  type Algorithm,
  type PolicyNumbers,
  type PolicyOutcome,
  type StateVector,
} from './types'

/*
 * The backlog is multiplied by the window as in meter.ts (one unit = windowMs, draining by
 * `limit` per ms), so every step is integer arithmetic; only its size differs: 10^12 tokens a
 * month is 2.7 x 10^21 there. Every slot of the state stays below 2^53:
 * - gcra keeps [tatMs, tatRemainder] as it always does (the remainder is below `limit`);
 * - the buckets keep [whole units missing, remainder x windowMs, lastRefill]: the backlog split
 *   at the window instead of one number, hence three slots where the narrow bucket has two.
 * Decisions are what decideMeter would answer with unbounded integers: exact, no rounding.
 */

/** decideMeter (meter.ts) on a BigInt backlog: the same cases, in the same order. */
export function decideMeterWide(
  backlog: bigint,
  policy: PolicyNumbers,
  cost: number,
  out: PolicyOutcome,
  shaping: boolean,
  maxDelayMs = 0,
): void {
  const window = BigInt(policy.windowMs)
  const limit = BigInt(policy.limit)
  const capacity = BigInt(policy.burst) * window
  const need = BigInt(cost) * window
  out.delayMs = 0
  if (cost > policy.burst) {
    return rejectForever(
      out,
      Number(floorDiv(capacity - backlog, window)),
      Number(ceilDiv(backlog, limit)),
    )
  }
  if (maxDelayMs > 0 && cost > 0) {
    // The wait before going, in backlog units (x limit per ms); <= 0: none.
    const ahead = shaping ? backlog : backlog + need - capacity
    const reserve = BigInt(maxDelayMs) * limit
    if (ahead <= reserve) {
      const left = floorDiv(capacity - backlog - need, window)
      admit(out, left > 0n ? left : 0n, ceilDiv(backlog + need, limit))
      out.delayMs = ahead > 0n ? Number(ceilDiv(ahead, limit)) : 0
    } else {
      refuse(out, capacity, backlog, window, limit, ceilDiv(ahead - reserve, limit))
    }
    return
  }
  const left = capacity - backlog - need
  if (left < 0n) return refuse(out, capacity, backlog, window, limit, ceilDiv(-left, limit))
  admit(out, floorDiv(left, window), ceilDiv(backlog + need, limit))
  // Units ahead of this one leave first, one every windowMs / limit ms.
  if (shaping && cost > 0) out.delayMs = Number(ceilDiv(backlog, limit))
}

function admit(out: PolicyOutcome, remaining: bigint, resetMs: bigint): void {
  out.allowed = true
  out.remaining = Number(remaining)
  out.resetMs = Number(resetMs)
  out.retryAfterMs = 0
}

function refuse(
  out: PolicyOutcome,
  capacity: bigint,
  backlog: bigint,
  window: bigint,
  limit: bigint,
  retryAfterMs: bigint,
): void {
  const left = floorDiv(capacity - backlog, window)
  out.allowed = false
  out.remaining = left > 0n ? Number(left) : 0
  out.resetMs = Number(ceilDiv(backlog, limit))
  out.retryAfterMs = Number(retryAfterMs)
  out.delayMs = 0
}

/** penalized (meter.ts): raised by cost x window, never past the capacity, never lowered. */
function penalizedWide(backlog: bigint, policy: PolicyNumbers, cost: number): bigint {
  const window = BigInt(policy.windowMs)
  const capacity = BigInt(policy.burst) * window
  const raised = backlog + BigInt(cost) * window
  const capped = raised < capacity ? raised : capacity
  return capped > backlog ? capped : backlog
}

/** The cost of `cost` units in backlog terms. */
const units = (cost: number, policy: PolicyNumbers): bigint =>
  BigInt(cost) * BigInt(policy.windowMs)

// gcra: [tatMs, tatRemainder in 1/limit ms], as gcra.ts.

function tatBacklog(s: StateVector, b: number, now: number, policy: PolicyNumbers): bigint {
  const ahead = BigInt(Math.floor(s[b] - now)) * BigInt(policy.limit) + BigInt(s[b + 1])
  return ahead > 0n ? ahead : 0n
}

function setTat(
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

// token-bucket, leaky-bucket: [whole units missing, remainder, lastRefill], as token-bucket.ts.

/** The backlog at `now` (drained since the last refill; held while the clock is behind it). */
function bucketBacklog(s: StateVector, b: number, now: number, policy: PolicyNumbers): bigint {
  const level = BigInt(s[b]) * BigInt(policy.windowMs) + BigInt(s[b + 1])
  if (now <= s[b + 2]) return level
  const left = level - BigInt(Math.floor(now - s[b + 2])) * BigInt(policy.limit)
  return left > 0n ? left : 0n
}

function setBucket(
  s: StateVector,
  b: number,
  now: number,
  policy: PolicyNumbers,
  level: bigint,
): void {
  const window = BigInt(policy.windowMs)
  const whole = level > 0n ? level / window : 0n
  s[b] = Number(whole)
  s[b + 1] = level > 0n ? Number(level - whole * window) : 0
  s[b + 2] = Math.max(now, s[b + 2])
}

function bucketExpiry(s: StateVector, b: number, policy: PolicyNumbers): number {
  const level = BigInt(s[b]) * BigInt(policy.windowMs) + BigInt(s[b + 1])
  return level > 0n ? s[b + 2] + Number(ceilDiv(level, BigInt(policy.limit))) : 0
}

type Backlog = (s: StateVector, b: number, now: number, policy: PolicyNumbers) => bigint
type SetBacklog = (
  s: StateVector,
  b: number,
  now: number,
  policy: PolicyNumbers,
  after: bigint,
) => void

/** A wide meter from how it reads and stores its backlog: the transitions are the same. */
function wideMeter(
  slots: number,
  backlog: Backlog,
  set: SetBacklog,
  shaping: boolean,
  expiresAt: Algorithm['expiresAt'],
): Algorithm {
  return {
    slots: () => slots,
    decide(s, b, now, policy, cost, out, maxDelayMs) {
      decideMeterWide(backlog(s, b, now, policy), policy, cost, out, shaping, maxDelayMs)
    },
    apply(s, b, now, policy, cost) {
      set(s, b, now, policy, backlog(s, b, now, policy) + units(cost, policy))
    },
    refund(s, b, now, policy, cost) {
      set(s, b, now, policy, backlog(s, b, now, policy) - units(cost, policy))
    },
    penalize(s, b, now, policy, cost) {
      set(s, b, now, policy, penalizedWide(backlog(s, b, now, policy), policy, cost))
    },
    expiresAt,
  }
}

export const gcraWide = wideMeter(2, tatBacklog, setTat, false, tatExpiry)
export const tokenBucketWide = wideMeter(3, bucketBacklog, setBucket, false, bucketExpiry)
export const leakyBucketWide = wideMeter(3, bucketBacklog, setBucket, true, bucketExpiry)
