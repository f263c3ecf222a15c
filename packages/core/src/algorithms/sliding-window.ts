import type { Policy } from '../policy'
import type { Algorithm, StateVector } from './types'
import { rejectForever } from './types'

/*
 * The window is cut into `precision` buckets of `windowMs / precision` ms. A request at `now`
 * counts every bucket that started within the last window in full, and the bucket just before
 * them weighted by the share of it still inside the window (Cloudflare's sliding counter; with
 * precision 1: current + previous x (1 - elapsed share)). Admit when floor(estimate) + cost <= limit.
 *
 * State: [newestBucket, counter per bucket in a ring of precision + 1]. Estimates are kept
 * multiplied by the bucket length so that every step is integer arithmetic.
 */

function count(s: StateVector, b: number, policy: Policy, bucket: number): number {
  const newest = s[b]
  const ring = policy.precision + 1
  if (bucket > newest || bucket <= newest - ring || bucket < 0) return 0
  return s[b + 1 + (bucket % ring)]
}

/** The estimate x bucket length at `now` (not floored). */
function scaledEstimate(s: StateVector, b: number, policy: Policy, now: number): number {
  const size = policy.windowMs / policy.precision
  const bucket = Math.floor(now / size)
  let full = 0
  for (let j = bucket - policy.precision + 1; j <= bucket; j++) full += count(s, b, policy, j)
  const oldest = count(s, b, policy, bucket - policy.precision)
  return full * size + oldest * (size - (now - bucket * size))
}

/** ms from `now` until floor(estimate) + cost <= limit, if no other request arrives. */
function waitFor(s: StateVector, b: number, policy: Policy, now: number, cost: number): number {
  const size = policy.windowMs / policy.precision
  const first = Math.floor(now / size)
  for (let bucket = first; bucket <= first + policy.precision + 1; bucket++) {
    let full = 0
    for (let j = bucket - policy.precision + 1; j <= bucket; j++) full += count(s, b, policy, j)
    const oldest = count(s, b, policy, bucket - policy.precision)
    // Within this bucket the estimate is full + oldest x (size - d) / size; it must drop below
    // limit - cost + 1, i.e. oldest x (size - d) < headroom x size.
    const headroom = policy.limit - cost + 1 - full
    if (headroom <= 0) continue
    const start = bucket === first ? now - bucket * size : 0
    let offset = start
    if (oldest * (size - start) >= headroom * size) {
      offset = size - Math.ceil((headroom * size) / oldest) + 1
    }
    return bucket * size + offset - now
  }
  return policy.windowMs // unreachable for cost <= limit: every bucket has expired by then
}

function resetAt(s: StateVector, b: number, policy: Policy): number {
  const ring = policy.precision + 1
  const size = policy.windowMs / policy.precision
  for (let bucket = s[b]; bucket > s[b] - ring && bucket >= 0; bucket--) {
    if (s[b + 1 + (bucket % ring)] > 0) return (bucket + policy.precision + 1) * size
  }
  return 0
}

export const slidingWindow: Algorithm = {
  slots: (policy) => policy.precision + 2,

  decide(s, b, rawNow, policy, cost, out) {
    const size = policy.windowMs / policy.precision
    // A clock that stepped back is held at the newest bucket already counted.
    const now = Math.max(rawNow, s[b] * size)
    const shift = now - rawNow
    const estimate = scaledEstimate(s, b, policy, now)
    const used = Math.floor(estimate / size)
    if (cost > policy.limit) {
      const reset = resetAt(s, b, policy)
      return rejectForever(out, policy.limit - used, reset > rawNow ? reset - rawNow : 0)
    }
    out.delayMs = 0
    if (used + cost <= policy.limit) {
      out.allowed = true
      out.remaining = policy.limit - used - cost
      out.retryAfterMs = 0
      const newest = cost > 0 ? Math.floor(now / size) : -1
      const reset = Math.max(
        resetAt(s, b, policy),
        newest >= 0 ? (newest + policy.precision + 1) * size : 0,
      )
      out.resetMs = reset > rawNow ? reset - rawNow : 0
    } else {
      out.allowed = false
      out.remaining = Math.max(0, policy.limit - used)
      out.retryAfterMs = waitFor(s, b, policy, now, cost) + shift
      out.resetMs = resetAt(s, b, policy) - rawNow
    }
  },

  apply(s, b, rawNow, policy, cost) {
    const size = policy.windowMs / policy.precision
    const ring = policy.precision + 1
    const bucket = Math.max(Math.floor(rawNow / size), s[b])
    if (bucket > s[b]) {
      const stale = Math.min(bucket - s[b], ring)
      for (let j = bucket - stale + 1; j <= bucket; j++) s[b + 1 + (j % ring)] = 0
      s[b] = bucket
    }
    s[b + 1 + (bucket % ring)] += cost
  },

  refund(s, b, now, policy, cost, at) {
    const size = policy.windowMs / policy.precision
    const ring = policy.precision + 1
    if (at === undefined) {
      // A reward: from the newest bucket that still counts backwards, never below zero.
      const oldest = Math.max(Math.floor(now / size) - policy.precision, s[b] - ring + 1, 0)
      let left = cost
      for (let bucket = s[b]; bucket >= oldest && left > 0; bucket--) {
        const slot = b + 1 + (bucket % ring)
        const taken = Math.min(left, s[slot])
        s[slot] -= taken
        left -= taken
      }
      return
    }
    const bucket = Math.floor(at / size)
    const oldestCounted = Math.floor(now / size) - policy.precision
    if (bucket < oldestCounted || bucket > s[b] || bucket <= s[b] - ring) return
    const slot = b + 1 + (bucket % ring)
    s[slot] = Math.max(0, s[slot] - cost)
  },

  penalize(s, b, rawNow, policy, cost) {
    const size = policy.windowMs / policy.precision
    const now = Math.max(rawNow, s[b] * size)
    // The current bucket counts in full: adding n to it raises floor(estimate) by exactly n.
    const used = Math.floor(scaledEstimate(s, b, policy, now) / size)
    const add = Math.min(cost, policy.limit - used)
    if (add > 0) slidingWindow.apply(s, b, rawNow, policy, add)
  },

  expiresAt: (s, b, policy) => resetAt(s, b, policy),
}
