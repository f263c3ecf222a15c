/**
 * Owns the sliding-log algorithm: one timestamp per counted unit, exact in any rolling window.
 */
import type { Algorithm, StateVector } from './types'
import { rejectForever } from './types'

/*
 * Exact: one timestamp per admitted cost unit, kept while it is inside the window
 * (now - window, now]. State: [count, head, ring size, ring...]: the `count` timestamps in
 * ascending order, the oldest at ring slot `head`, in a ring of at least `limit` slots. A ring
 * rather than a sorted array, so that dropping the oldest timestamps and logging a new one do
 * not shift the whole log: O(log limit) per decision instead of O(limit).
 * Rejected requests are not logged.
 */

const COUNT = 0
const HEAD = 1
const SIZE = 2
const RING = 3

/** Where the i-th stored timestamp (0 = the oldest) is. */
function slot(s: StateVector, b: number, i: number): number {
  const k = s[b + HEAD] + i
  const size = s[b + SIZE]
  return b + RING + (k >= size ? k - size : k)
}

/** Index (0-based among the stored timestamps) of the first one still inside the window. */
function firstLive(s: StateVector, b: number, now: number, windowMs: number): number {
  const stored = s[b + COUNT]
  const expired = now - windowMs
  if (stored === 0 || s[slot(s, b, 0)] > expired) return 0
  // Usually one timestamp has left since the last request; else a binary search (ascending).
  if (stored === 1 || s[slot(s, b, 1)] > expired) return 1
  let low = 2
  let high = stored
  while (low < high) {
    const mid = (low + high) >>> 1
    if (s[slot(s, b, mid)] <= expired) low = mid + 1
    else high = mid
  }
  return low
}

/**
 * Makes the ring at least `limit` slots (the row holds `limit + RING`: a store sizes rows for the
 * widest policy it has seen). An elastic limit grows the ring once; a smaller limit keeps it.
 */
function ensureRing(s: StateVector, b: number, limit: number): void {
  const size = s[b + SIZE]
  if (size >= limit) return
  const stored = s[b + COUNT]
  // A new key (or an empty log) has nothing to move, and allocates nothing.
  if (stored > 0) {
    const log = new Array<number>(stored)
    for (let i = 0; i < stored; i++) log[i] = s[slot(s, b, i)]
    for (let i = 0; i < stored; i++) s[b + RING + i] = log[i]
  }
  s[b + HEAD] = 0
  s[b + SIZE] = limit
}

/** Forgets the `first` oldest timestamps. */
function dropOldest(s: StateVector, b: number, first: number): void {
  if (first === 0) return
  const head = s[b + HEAD] + first
  const size = s[b + SIZE]
  s[b + HEAD] = head >= size ? head - size : head
  s[b + COUNT] -= first
}

export const slidingLog: Algorithm = {
  slots: (policy) => policy.limit + RING,

  decide(s, b, now, policy, cost, out) {
    const first = firstLive(s, b, now, policy.windowMs)
    const live = s[b + COUNT] - first
    const newest = live > 0 ? s[slot(s, b, s[b + COUNT] - 1)] : 0
    if (cost > policy.limit)
      return rejectForever(out, policy.limit - live, live > 0 ? newest + policy.windowMs - now : 0)
    out.delayMs = 0
    if (live + cost <= policy.limit) {
      out.allowed = true
      out.remaining = policy.limit - live - cost
      out.retryAfterMs = 0
      out.resetMs = cost > 0 ? policy.windowMs : live > 0 ? newest + policy.windowMs - now : 0
    } else {
      out.allowed = false
      out.remaining = Math.max(0, policy.limit - live)
      // The request fits once the (live + cost - limit) oldest timestamps have left the window.
      const mustExpire = s[slot(s, b, first + (live + cost - policy.limit) - 1)]
      out.retryAfterMs = mustExpire + policy.windowMs - now
      out.resetMs = newest + policy.windowMs - now
    }
  },

  apply(s, b, now, policy, cost) {
    ensureRing(s, b, policy.limit)
    dropOldest(s, b, firstLive(s, b, now, policy.windowMs))
    const stored = s[b + COUNT]
    // Keep ascending order even if the clock stepped back: later timestamps move up by cost.
    let later = 0
    while (later < stored && s[slot(s, b, stored - 1 - later)] > now) later++
    for (let i = stored - 1; i >= stored - later; i--) s[slot(s, b, i + cost)] = s[slot(s, b, i)]
    for (let i = 0; i < cost; i++) s[slot(s, b, stored - later + i)] = now
    s[b + COUNT] = stored + cost
  },

  refund(s, b, now, policy, cost, at) {
    if (at === undefined) {
      // A reward: the newest timestamps go first (they are the last ones, ascending order).
      s[b + COUNT] = Math.max(0, s[b + COUNT] - cost)
      return
    }
    if (at <= now - policy.windowMs) return
    let stored = s[b + COUNT]
    let left = cost
    for (let i = stored - 1; i >= 0 && left > 0; i--) {
      if (s[slot(s, b, i)] !== at) continue
      for (let j = i; j < stored - 1; j++) s[slot(s, b, j)] = s[slot(s, b, j + 1)]
      stored--
      left--
    }
    s[b + COUNT] = stored
  },

  penalize(s, b, now, policy, cost) {
    const live = s[b + COUNT] - firstLive(s, b, now, policy.windowMs)
    const add = Math.min(cost, policy.limit - live)
    if (add > 0) slidingLog.apply(s, b, now, policy, add)
  },

  expiresAt: (s, b, policy) =>
    s[b + COUNT] > 0 ? s[slot(s, b, s[b + COUNT] - 1)] + policy.windowMs : 0,
}
