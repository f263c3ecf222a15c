/**
 * Owns what the meter algorithms (token-bucket, leaky-bucket, gcra) share: a debt that drains
 * at the refill rate, the decision over it, and penalties; each twice, side by side: on a
 * double (narrow policies) and on a BigInt (wide ones, see isWide), the same cases in the same
 * order. test/narrow-wide.test.ts holds the two to the same answers at the 2^50 boundary.
 */
import { ceilDiv, floorDiv } from './exact'
import {
  rejectForever,
  type Algorithm,
  type PolicyNumbers,
  type PolicyOutcome,
  type StateVector,
} from './types'

/*
 * token-bucket, leaky-bucket and gcra measure the same thing: a backlog that every admitted
 * unit raises by one and that drains at `limit` per `window`, with room for `burst` units.
 * The backlog is kept multiplied by the window (one unit = windowMs), so that it drains by
 * exactly `limit` per ms and every step is integer arithmetic: four a minute refills one unit
 * in exactly 15000 ms, with no float drift. The three differ in how they store the backlog
 * and in leaky-bucket's shaping delay.
 */

/**
 * Fills `out` for a request of `cost` against a backlog (already drained to `now`).
 *
 * Reservations (`maxDelayMs` > 0, `limiter.wait`): the request is admitted when the caller
 * would have to wait at most maxDelayMs before going, and `delayMs` says how long. All in
 * integers: a wait of w ms is w x limit backlog units (the backlog drains by `limit` per ms).
 * - token-bucket, gcra: the wait is until the request fits, i.e. until the excess
 *   backlog + need - capacity has drained: admitted when excess <= maxDelayMs x limit, with
 *   delayMs = ceil(excess / limit) (0 when it fits now). Applying it raises the backlog past the
 *   capacity by the excess, so the next reservation queues behind it: N reservations get delays
 *   at the policy's pace (window / limit apart), none early.
 * - leaky-bucket: the wait is its shaping delay ceil(backlog / limit), until the units ahead
 *   have left. It is never shorter than the excess wait (need <= capacity, so excess <= backlog),
 *   so "max of the two" is the shaping delay, and admission tests it: admitted when
 *   backlog <= maxDelayMs x limit, even past the queue's capacity (a reservation), and rejected
 *   when the queue has room but the delay would pass maxDelayMs. The backlog then exceeds the
 *   capacity by at most maxDelayMs x limit as well.
 * A rejected reservation's `retryAfterMs` is when the same call would be admitted.
 */
export function decideMeter(
  backlog: number,
  policy: PolicyNumbers,
  cost: number,
  out: PolicyOutcome,
  shaping: boolean,
  maxDelayMs: number | undefined,
): void {
  // The common case only, kept this small so that V8 inlines it into the store's hot path.
  const windowMs = policy.windowMs
  const after = backlog + cost * windowMs
  const left = policy.burst * windowMs - after
  if (left < 0 || (maxDelayMs! > 0 && cost !== 0)) {
    return decideMeterRest(backlog, policy, cost, out, shaping, maxDelayMs ?? 0)
  }
  out.allowed = true
  out.remaining = Math.floor(left / windowMs)
  out.resetMs = Math.ceil(after / policy.limit)
  out.retryAfterMs = 0
  // Units ahead of this one leave first, one every windowMs / limit ms.
  out.delayMs = shaping && cost > 0 ? Math.ceil(backlog / policy.limit) : 0
}

/** decideMeter past its common case, a plain request that fits (kept apart to keep that small). */
function decideMeterRest(
  backlog: number,
  policy: PolicyNumbers,
  cost: number,
  out: PolicyOutcome,
  shaping: boolean,
  maxDelayMs: number,
): void {
  const capacity = policy.burst * policy.windowMs
  const need = cost * policy.windowMs
  if (cost > policy.burst) {
    return rejectForever(
      out,
      Math.floor((capacity - backlog) / policy.windowMs),
      Math.ceil(backlog / policy.limit),
    )
  }
  if (maxDelayMs > 0 && cost > 0) {
    // The wait before going, in backlog units (x limit per ms); <= 0: none.
    const ahead = shaping ? backlog : backlog + need - capacity
    const reserve = maxDelayMs * policy.limit
    if (ahead <= reserve) {
      out.allowed = true
      const left = Math.floor((capacity - backlog - need) / policy.windowMs)
      out.remaining = left > 0 ? left : 0
      out.resetMs = Math.ceil((backlog + need) / policy.limit)
      out.retryAfterMs = 0
      out.delayMs = ahead > 0 ? Math.ceil(ahead / policy.limit) : 0
    } else {
      out.allowed = false
      out.remaining = Math.max(0, Math.floor((capacity - backlog) / policy.windowMs))
      out.resetMs = Math.ceil(backlog / policy.limit)
      out.retryAfterMs = Math.ceil((ahead - reserve) / policy.limit)
      out.delayMs = 0
    }
    return
  }
  out.allowed = false
  out.remaining = Math.max(0, Math.floor((capacity - backlog) / policy.windowMs))
  out.resetMs = Math.ceil(backlog / policy.limit)
  out.retryAfterMs = Math.ceil((backlog + need - capacity) / policy.limit)
  out.delayMs = 0
}

/** Backlog left at `now` from `level` recorded at `last`. */
export function drained(level: number, last: number, now: number, policy: PolicyNumbers): number {
  if (now <= last) return level
  const left = level - (now - last) * policy.limit
  return left > 0 ? left : 0
}

/**
 * The backlog after a penalty of `cost`: raised by cost x window but never past the capacity;
 * a backlog already past it (a reservation, a soft limit) is kept.
 */
export function penalized(backlog: number, policy: PolicyNumbers, cost: number): number {
  const capacity = policy.burst * policy.windowMs
  const raised = Math.min(capacity, backlog + cost * policy.windowMs)
  return raised > backlog ? raised : backlog
}

/*
 * Wide policies (capacity x window past 2^50, see isWide): the backlog is multiplied by the
 * window as above, so every step is integer arithmetic; only its size differs (10^12 tokens a
 * month is 2.7 x 10^21 there), so it is a BigInt. Every slot of a state stays below 2^53.
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

type Backlog = (s: StateVector, b: number, now: number, policy: PolicyNumbers) => bigint
type SetBacklog = (
  s: StateVector,
  b: number,
  now: number,
  policy: PolicyNumbers,
  after: bigint,
) => void

/** A wide meter from how it reads and stores its backlog: the transitions are the same. */
export function wideMeter(
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
