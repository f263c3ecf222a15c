import type { Algorithm, StateVector } from './types'
import { rejectForever } from './types'

/*
 * Exact: one timestamp per admitted cost unit, kept while it is inside the window
 * (now - window, now]. State: [count, timestamps ascending...], at most `limit` timestamps.
 * Rejected requests are not logged.
 */

/** Index (0-based among the stored timestamps) of the first one still inside the window. */
function firstLive(s: StateVector, b: number, now: number, windowMs: number): number {
  const stored = s[b]
  let i = 0
  while (i < stored && s[b + 1 + i] <= now - windowMs) i++
  return i
}

export const slidingLog: Algorithm = {
  slots: (policy) => policy.limit + 1,

  decide(s, b, now, policy, cost, out) {
    const first = firstLive(s, b, now, policy.windowMs)
    const live = s[b] - first
    const newest = live > 0 ? s[b + s[b]] : 0
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
      const mustExpire = s[b + 1 + first + (live + cost - policy.limit) - 1]
      out.retryAfterMs = mustExpire + policy.windowMs - now
      out.resetMs = newest + policy.windowMs - now
    }
  },

  apply(s, b, now, policy, cost) {
    const first = firstLive(s, b, now, policy.windowMs)
    let stored = s[b]
    if (first > 0) {
      for (let i = first; i < stored; i++) s[b + 1 + i - first] = s[b + 1 + i]
      stored -= first
    }
    // Keep ascending order even if the clock stepped back.
    let at = stored
    while (at > 0 && s[b + at] > now) at--
    for (let i = stored - 1; i >= at; i--) s[b + 1 + i + cost] = s[b + 1 + i]
    for (let i = 0; i < cost; i++) s[b + 1 + at + i] = now
    s[b] = stored + cost
  },

  refund(s, b, now, policy, cost, at) {
    if (at === undefined) {
      // A reward: the newest timestamps go first (they are the last ones, ascending order).
      s[b] = Math.max(0, s[b] - cost)
      return
    }
    if (at <= now - policy.windowMs) return
    let stored = s[b]
    let left = cost
    for (let i = stored - 1; i >= 0 && left > 0; i--) {
      if (s[b + 1 + i] !== at) continue
      for (let j = i; j < stored - 1; j++) s[b + 1 + j] = s[b + 2 + j]
      stored--
      left--
    }
    s[b] = stored
  },

  penalize(s, b, now, policy, cost) {
    const live = s[b] - firstLive(s, b, now, policy.windowMs)
    const add = Math.min(cost, policy.limit - live)
    if (add > 0) slidingLog.apply(s, b, now, policy, add)
  },

  expiresAt: (s, b, policy) => (s[b] > 0 ? s[b + s[b]] + policy.windowMs : 0),
}
