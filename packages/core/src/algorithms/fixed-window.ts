/**
 * Owns the fixed-window algorithm: one counter per window, held at its window when the clock
 * steps back.
 */
import type { Algorithm, StateVector } from './types'
import { decideThenApply, decideWindow, modulo, windowIndex } from './types'

/**
 * Counts requests in windows aligned to multiples of the window on the clock.
 * State: [windowStart, count].
 */

/**
 * The window `now` counts in: its own, or, when the clock stepped back behind the newest window
 * already counted, that newer window (as sliding-window holds its newest bucket): an older
 * window would start a fresh count and admit the limit again.
 */
function currentWindow(s: StateVector, b: number, now: number, windowMs: number): number {
  const aligned = windowIndex(now, windowMs) * windowMs
  return s[b] > aligned ? s[b] : aligned
}
export const fixedWindow: Algorithm = {
  slots: () => 2,

  decide(s, b, now, policy, cost, out) {
    const windowStart = currentWindow(s, b, now, policy.windowMs)
    const count = s[b] === windowStart ? s[b + 1] : 0
    decideWindow(out, policy.limit, count, cost, windowStart + policy.windowMs - now)
  },

  consume(s, b, now, policy, cost, out) {
    const windowStart = windowIndex(now, policy.windowMs) * policy.windowMs
    const count = s[b] === windowStart ? s[b + 1] : 0
    // The common case in one pass, a request that fits; anything else (a clock behind the
    // counted window too): decide, then apply.
    if (count + cost > policy.limit || cost === 0 || s[b] > windowStart) {
      return decideThenApply(fixedWindow, s, b, now, policy, cost, out)
    }
    out.allowed = true
    out.remaining = policy.limit - count - cost
    out.resetMs = windowStart + policy.windowMs - now
    out.retryAfterMs = 0
    out.delayMs = 0
    s[b] = windowStart
    s[b + 1] = count + cost
  },

  apply(s, b, now, policy, cost) {
    const windowStart = currentWindow(s, b, now, policy.windowMs)
    if (s[b] !== windowStart) {
      s[b] = windowStart
      s[b + 1] = 0
    }
    s[b + 1] += cost
  },

  refund(s, b, _now, policy, cost, at) {
    // A reward (no `at`) takes from the stored window: a stale one no longer counts anyway.
    if (at === undefined || s[b] === at - modulo(at, policy.windowMs))
      s[b + 1] = Math.max(0, s[b + 1] - cost)
  },

  penalize(s, b, now, policy, cost) {
    const windowStart = windowIndex(now, policy.windowMs) * policy.windowMs
    // A clock that stepped back into an older window leaves the newer count as it is.
    if (s[b] > windowStart) return
    if (s[b] !== windowStart) {
      s[b] = windowStart
      s[b + 1] = 0
    }
    const raised = Math.min(policy.limit, s[b + 1] + cost)
    if (raised > s[b + 1]) s[b + 1] = raised
  },

  expiresAt: (s, b, policy) => (s[b + 1] > 0 ? s[b] + policy.windowMs : 0),
}
