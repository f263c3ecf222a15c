/**
 * Owns the sliding-window algorithm: counters per bucket, the oldest weighted by its overlap
 * with the window, and the wait and reset times they imply.
 */
import type { Algorithm, PolicyNumbers, PolicyOutcome, StateVector } from './types'
import { decideThenApply, modulo, rejectForever, windowIndex } from './types'
import { mulDivCeil, mulDivFloor, productAtLeast } from './exact'

/*
 * The window is cut into `precision` buckets of `windowMs / precision` ms. A request at `now`
 * counts every bucket that started within the last window in full, and the bucket just before
 * them weighted by the share of it still inside the window (Cloudflare's sliding counter; with
 * precision 1: current + previous x (1 - elapsed share)). Admit when floor(estimate) + cost <= limit.
 *
 * State: [newestBucket, counter per bucket in a ring of precision + 1]. Estimates are kept
 * multiplied by the bucket length so that every step is integer arithmetic, exact at any size
 * (exact.ts: a wide policy's counter x bucket length may pass 2^53).
 */

function count(s: StateVector, b: number, policy: PolicyNumbers, bucket: number): number {
  const newest = s[b]
  const ring = policy.precision + 1
  if (bucket > newest || bucket <= newest - ring || bucket < 0) return 0
  return s[b + 1 + ringSlot(bucket, ring)]
}

/**
 * bucket mod ring. Bucket numbers stay below 2^31 for buckets of a second or more: V8 then
 * divides in integers, cheaper than the division modulo() needs for larger ones.
 */
function ringSlot(bucket: number, ring: number): number {
  if (bucket > 0x7fffffff) return modulo(bucket, ring)
  return ring === 2 ? bucket & 1 : (bucket | 0) % ring
}

/** Bucket length in ms (no division in the common precision 1). */
function bucketMs(policy: PolicyNumbers): number {
  return policy.precision === 1 ? policy.windowMs : policy.windowMs / policy.precision
}

/**
 * The ring slot of bucket `j`, given the slot of a later bucket `from` (from - ring < j <= from):
 * stepping back from one slot avoids a division per bucket on the hot path.
 */
function slotBefore(fromSlot: number, from: number, j: number, ring: number): number {
  const k = fromSlot - (from - j)
  return k < 0 ? k + ring : k
}

/**
 * floor(estimate) at `now`, `bucket` being now's bucket, not before the newest one counted:
 * the buckets counted in full, plus the floored share of the one counted in part (no division
 * when that one is empty).
 */
function usedAt(
  s: StateVector,
  b: number,
  policy: PolicyNumbers,
  now: number,
  size: number,
  bucket: number,
): number {
  if (policy.precision !== 1) return usedOverRing(s, b, policy, now, size, bucket)
  // The classic two counters: now's bucket in full, the one before it in part.
  const newest = s[b]
  if (bucket > newest + 1) return 0
  const newestCount = s[b + 1 + ringSlot(newest, 2)]
  const before = bucket > newest ? newestCount : newest > 0 ? s[b + 1 + ringSlot(newest - 1, 2)] : 0
  const full = bucket > newest ? 0 : newestCount
  return before > 0 ? full + mulDivFloor(before, size - (now - bucket * size), size) : full
}

/** usedAt over `precision` buckets (kept apart so the common case stays small). */
function usedOverRing(
  s: StateVector,
  b: number,
  policy: PolicyNumbers,
  now: number,
  size: number,
  bucket: number,
): number {
  const precision = policy.precision
  const ring = precision + 1
  const newest = s[b]
  const partial = bucket - precision // counted in part; the ones after it in full
  if (partial > newest) return 0
  const newestSlot = ringSlot(newest, ring)
  let full = 0
  for (let j = Math.max(partial + 1, newest - precision, 0); j <= newest; j++) {
    full += s[b + 1 + slotBefore(newestSlot, newest, j, ring)]
  }
  const oldest =
    partial >= 0 && partial > newest - ring
      ? s[b + 1 + slotBefore(newestSlot, newest, partial, ring)]
      : 0
  return oldest > 0 ? full + mulDivFloor(oldest, size - (now - bucket * size), size) : full
}

/** ms from `now` until floor(estimate) + cost <= limit, if no other request arrives. */
function waitFor(
  s: StateVector,
  b: number,
  policy: PolicyNumbers,
  now: number,
  cost: number,
): number {
  const size = bucketMs(policy)
  const first = windowIndex(now, size)
  const precision = policy.precision
  // The buckets counted in full, summed once and then slid a bucket at a time: summed anew for
  // each bucket, a refusal cost precision^2 steps (125 ms of event loop at precision 8,000).
  let full = 0
  for (let j = first - precision + 1; j <= first; j++) full += count(s, b, policy, j)
  for (let bucket = first; bucket <= first + precision + 1; bucket++) {
    if (bucket > first)
      full += count(s, b, policy, bucket) - count(s, b, policy, bucket - precision)
    const oldest = count(s, b, policy, bucket - precision)
    // Within this bucket the estimate is full + oldest x (size - d) / size; it must drop below
    // limit - cost + 1, i.e. oldest x (size - d) < headroom x size.
    const headroom = policy.limit - cost + 1 - full
    if (headroom <= 0) continue
    const start = bucket === first ? now - bucket * size : 0
    let offset = start
    if (productAtLeast(oldest, size - start, headroom, size)) {
      offset = size - mulDivCeil(headroom, size, oldest) + 1
    }
    return bucket * size + offset - now
  }
  return policy.windowMs // unreachable for cost <= limit: every bucket has expired by then
}

/** The newest bucket that still holds a count (-1: none); every older one is gone before it. */
function newestCounted(s: StateVector, b: number, policy: PolicyNumbers): number {
  const ring = policy.precision + 1
  const newest = s[b]
  let slot = ringSlot(newest, ring)
  for (let bucket = newest; bucket > newest - ring && bucket >= 0; bucket--) {
    if (s[b + 1 + slot] > 0) return bucket
    slot = slot === 0 ? ring - 1 : slot - 1
  }
  return -1
}

/** When every counted request has left the window (0: none counted): the state's expiry. */
function resetAt(s: StateVector, b: number, policy: PolicyNumbers, size: number): number {
  const bucket = newestCounted(s, b, policy)
  return bucket < 0 ? 0 : (bucket + policy.precision + 1) * size
}

/**
 * The reset a decision reports (`resetMs`, the headers' `t`): when the newest counted requests
 * stop counting in full and begin to fade out of the estimate; 0 (now) once they fade. At most
 * one window ahead; the quota is whole one bucket after it. (Whole again would be up to a
 * window and a bucket ahead: IETF draft-10's `t` is when more quota is made available, not when
 * all of it is.) A fixed moment, so a reset told earlier counts down to it (RedisStore's block
 * cache answers so).
 */
function releaseAt(
  s: StateVector,
  b: number,
  policy: PolicyNumbers,
  size: number,
  now: number,
): number {
  const bucket = newestCounted(s, b, policy)
  if (bucket < 0) return 0
  const fades = (bucket + policy.precision) * size
  return fades > now ? fades : 0
}

/** decide's answer to a request that does not fit (kept apart so the admit path stays small). */
function refuse(
  s: StateVector,
  b: number,
  rawNow: number,
  now: number,
  policy: PolicyNumbers,
  cost: number,
  out: PolicyOutcome,
  used: number,
  size: number,
): void {
  const release = releaseAt(s, b, policy, size, now)
  const resetMs = release > rawNow ? release - rawNow : 0
  if (cost > policy.limit) return rejectForever(out, policy.limit - used, resetMs)
  out.allowed = false
  out.delayMs = 0
  out.remaining = Math.max(0, policy.limit - used)
  out.retryAfterMs = waitFor(s, b, policy, now, cost) + (now - rawNow)
  out.resetMs = resetMs
}

export const slidingWindow: Algorithm = {
  slots: (policy) => policy.precision + 2,

  decide(s, b, rawNow, policy, cost, out) {
    const size = bucketMs(policy)
    // A clock that stepped back is held at the newest bucket already counted.
    const now = Math.max(rawNow, s[b] * size)
    const bucket = windowIndex(now, size)
    const used = usedAt(s, b, policy, now, size, bucket)
    if (cost > policy.limit || used + cost > policy.limit) {
      return refuse(s, b, rawNow, now, policy, cost, out, used, size)
    }
    out.allowed = true
    out.remaining = policy.limit - used - cost
    out.retryAfterMs = 0
    out.delayMs = 0
    // Counting this request, now's bucket is the newest counted: it fades from the end of
    // the window that starts with it.
    const reset = cost > 0 ? (bucket + policy.precision) * size : releaseAt(s, b, policy, size, now)
    out.resetMs = reset > rawNow ? reset - rawNow : 0
  },

  consume(s, b, rawNow, policy, cost, out) {
    const size = policy.windowMs
    const newest = s[b]
    const bucket = windowIndex(rawNow, size)
    // The common case in one pass: two counters (precision 1), a clock not behind the newest
    // bucket, and a request that fits. Anything else: decide, then apply.
    if (policy.precision !== 1 || bucket < newest || bucket > 0x7fffffff) {
      return decideThenApply(slidingWindow, s, b, rawNow, policy, cost, out)
    }
    let used = 0
    if (bucket <= newest + 1) {
      const newestCount = s[b + 1 + (newest & 1)]
      const before = bucket > newest ? newestCount : newest > 0 ? s[b + 1 + ((newest - 1) & 1)] : 0
      used = bucket > newest ? 0 : newestCount
      if (before > 0) used += mulDivFloor(before, size - (rawNow - bucket * size), size)
    }
    if (used + cost > policy.limit || cost === 0) {
      return decideThenApply(slidingWindow, s, b, rawNow, policy, cost, out)
    }
    out.allowed = true
    out.remaining = policy.limit - used - cost
    out.retryAfterMs = 0
    out.delayMs = 0
    out.resetMs = (bucket + 1) * size - rawNow
    if (bucket > newest) {
      // Buckets between the newest counted and now's hold nothing any more.
      if (bucket > newest + 1) s[b + 1 + ((bucket - 1) & 1)] = 0
      s[b + 1 + (bucket & 1)] = 0
      s[b] = bucket
    }
    s[b + 1 + (bucket & 1)] += cost
  },

  apply(s, b, rawNow, policy, cost) {
    const ring = policy.precision + 1
    const newest = s[b]
    const bucket = Math.max(windowIndex(rawNow, bucketMs(policy)), newest)
    const slot = ringSlot(bucket, ring)
    if (bucket > newest) {
      const stale = Math.min(bucket - newest, ring)
      for (let j = bucket - stale + 1; j <= bucket; j++)
        s[b + 1 + slotBefore(slot, bucket, j, ring)] = 0
      s[b] = bucket
    }
    s[b + 1 + slot] += cost
  },

  refund(s, b, now, policy, cost, at) {
    const size = bucketMs(policy)
    const ring = policy.precision + 1
    if (at === undefined) {
      // A reward: from the newest bucket that still counts backwards, never below zero.
      const oldest = Math.max(windowIndex(now, size) - policy.precision, s[b] - ring + 1, 0)
      let left = cost
      for (let bucket = s[b]; bucket >= oldest && left > 0; bucket--) {
        const slot = b + 1 + ringSlot(bucket, ring)
        const taken = Math.min(left, s[slot])
        s[slot] -= taken
        left -= taken
      }
      return
    }
    const bucket = Math.floor(at / size)
    const oldestCounted = windowIndex(now, size) - policy.precision
    if (bucket < oldestCounted || bucket > s[b] || bucket <= s[b] - ring) return
    const slot = b + 1 + ringSlot(bucket, ring)
    s[slot] = Math.max(0, s[slot] - cost)
  },

  penalize(s, b, rawNow, policy, cost) {
    const size = bucketMs(policy)
    const now = Math.max(rawNow, s[b] * size)
    // The current bucket counts in full: adding n to it raises floor(estimate) by exactly n.
    const used = usedAt(s, b, policy, now, size, windowIndex(now, size))
    const add = Math.min(cost, policy.limit - used)
    if (add > 0) slidingWindow.apply(s, b, rawNow, policy, add)
  },

  expiresAt: (s, b, policy) => resetAt(s, b, policy, bucketMs(policy)),
}
