/**
 * Owns fixed-window anchored at each key's first request (`anchor: 'first-request'`): one
 * counter, its window starting at the first request counted while no window runs.
 */
import type { Algorithm, StateVector } from './types'
import { decideThenApply, decideWindow } from './types'

/**
 * State: [windowStart, count], as clock-aligned fixed-window's. A window runs while it holds a
 * count and `now` is before its end; a clock stepped back behind its start keeps it running
 * (its count still holds), so a step never opens a fresh window early.
 */
function running(s: StateVector, b: number, now: number, windowMs: number): boolean {
  return s[b + 1] > 0 && now < s[b] + windowMs
}

/** ms until the running window ends: at most one window, also on a clock stepped back. */
function untilEnd(s: StateVector, b: number, now: number, windowMs: number): number {
  const left = s[b] + windowMs - now
  return left < windowMs ? left : windowMs
}

export const firstRequestWindow: Algorithm = {
  slots: () => 2,

  decide(s, b, now, policy, cost, out) {
    const live = running(s, b, now, policy.windowMs)
    // A request that finds no window starts one: it ends a whole window from now.
    const untilReset = live ? untilEnd(s, b, now, policy.windowMs) : policy.windowMs
    decideWindow(out, policy.limit, live ? s[b + 1] : 0, cost, untilReset)
  },

  consume(s, b, now, policy, cost, out) {
    decideThenApply(firstRequestWindow, s, b, now, policy, cost, out)
  },

  apply(s, b, now, policy, cost) {
    if (!running(s, b, now, policy.windowMs)) {
      s[b] = now
      s[b + 1] = 0
    }
    s[b + 1] += cost
  },

  refund(s, b, _now, policy, cost, at) {
    // A reward (no `at`) takes from the running window; a charge made in an earlier window is
    // gone with it.
    if (at === undefined || (s[b] <= at && at < s[b] + policy.windowMs))
      s[b + 1] = Math.max(0, s[b + 1] - cost)
  },

  penalize(s, b, now, policy, cost) {
    if (!running(s, b, now, policy.windowMs)) {
      s[b] = now
      s[b + 1] = 0
    }
    const raised = Math.min(policy.limit, s[b + 1] + cost)
    if (raised > s[b + 1]) s[b + 1] = raised
  },

  expiresAt: (s, b, policy) => (s[b + 1] > 0 ? s[b] + policy.windowMs : 0),
}
