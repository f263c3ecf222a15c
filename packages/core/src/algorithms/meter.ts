import type { Policy, PolicyOutcome } from '../policy'
import { rejectForever } from './types'

/*
 * token-bucket, leaky-bucket and gcra measure the same thing: a backlog that every admitted
 * unit raises by one and that drains at `limit` per `window`, with room for `burst` units.
 * The backlog is kept multiplied by the window (one unit = windowMs), so that it drains by
 * exactly `limit` per ms and every step is integer arithmetic: four a minute refills one unit
 * in exactly 15000 ms, with no float drift. The three differ in how they store the backlog
 * and in leaky-bucket's shaping delay.
 */

/** Fills `out` for a request of `cost` against a backlog (already drained to `now`). */
export function decideMeter(
  backlog: number,
  policy: Policy,
  cost: number,
  out: PolicyOutcome,
  shaping: boolean,
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
  if (backlog + need <= capacity) {
    out.allowed = true
    out.remaining = Math.floor((capacity - backlog - need) / policy.windowMs)
    out.resetMs = Math.ceil((backlog + need) / policy.limit)
    out.retryAfterMs = 0
    // Units ahead of this one leave first, one every windowMs / limit ms.
    out.delayMs = shaping && cost > 0 ? Math.ceil(backlog / policy.limit) : 0
  } else {
    out.allowed = false
    out.remaining = Math.max(0, Math.floor((capacity - backlog) / policy.windowMs))
    out.resetMs = Math.ceil(backlog / policy.limit)
    out.retryAfterMs = Math.ceil((backlog + need - capacity) / policy.limit)
    out.delayMs = 0
  }
}

/** Backlog left at `now` from `level` recorded at `last`. */
export function drained(level: number, last: number, now: number, policy: Policy): number {
  if (now <= last) return level
  const left = level - (now - last) * policy.limit
  return left > 0 ? left : 0
}
