// Shaping holds (leaky-bucket `delayMs`): bounded in number and length, released when the
// client goes away, with the request's charge given back.
import { checkFiniteNumber, checkWholeNumber } from '@sluice/core/web'
import type { ResponseLike } from './types'

/** Holds at once per limiter, by default: beyond, a request that would be held is refused. */
export const DEFAULT_MAX_HOLDS = 10_000
/** The longest hold, by default: HTTP clients and proxies rarely wait longer than this. */
export const DEFAULT_MAX_DELAY_MS = 30_000

/** What became of a hold. */
export type HoldEnd = 'passed' | 'left'

export function checkMaxHolds(value: unknown): number {
  if (value === undefined) return DEFAULT_MAX_HOLDS
  return checkWholeNumber(value, 'maxHolds', 'a whole number of requests (0 holds none)')
}

export function checkMaxDelayMs(value: unknown): number {
  if (value === undefined) return DEFAULT_MAX_DELAY_MS
  return checkFiniteNumber(value, 'maxDelayMs', 'a number of ms >= 0', true)
}

/** The holds of one limiter: how many are out, and the hold itself. */
export class Holds {
  /** Requests held right now. */
  active = 0
  /** Requests queued for their slot right now (`queue`, `maxWaitMs`). */
  waiting = 0

  constructor(
    readonly max: number,
    readonly maxDelayMs: number,
  ) {}

  /** Whether a hold of `delayMs` may start now. */
  admits(delayMs: number): boolean {
    return delayMs <= this.maxDelayMs && this.active < this.max
  }

  /**
   * Holds for `delayMs`; resolves 'passed', or 'left' as soon as the client closes the
   * connection (the timer is cleared at once and `giveBack` returns the request's charge).
   */
  hold(delayMs: number, res: ResponseLike, giveBack: () => void): Promise<HoldEnd> {
    if (res.destroyed) {
      giveBack()
      return Promise.resolve('left')
    }
    this.active++
    return new Promise<HoldEnd>((resolve) => {
      const onClose = (): void => {
        if (res.writableFinished) return
        clearTimeout(timer)
        this.active--
        giveBack()
        resolve('left')
      }
      const timer = setTimeout(() => {
        res.off('close', onClose)
        this.active--
        resolve('passed')
      }, delayMs)
      res.once('close', onClose)
    })
  }
}
