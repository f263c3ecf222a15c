/**
 * Owns what a store on Redis's clock remembers of its recent sliding-log charges: when Redis
 * logged each one, by the key and the request's `now`. A refund names the request it gives back
 * by that `now` (`at`, the limiter's clock: skipSuccessfulRequests, `limiter.refund`), and a log
 * removes only the timestamps scored exactly when Redis logged them, which the limiter's clock
 * cannot tell; this can.
 */
import type { StoreRefund, StoreRequest, StoreResult } from '@sluice/core'
import { OldestFirst } from '@sluice/core/web'

/** Charges remembered at most; the oldest are forgotten first (their refund is then inexact). */
export const MAX_CHARGES = 10_000

function chargeId(request: StoreRequest, at: number): string {
  const keys = request.keys === undefined ? '' : request.keys.join('\u0000')
  return `${at}\u0000${request.key}\u0000${keys}`
}

export class ChargeTimes {
  /** Redis times of the charges made at one request `now` on one key, oldest first. */
  private readonly times = new Map<string, number[]>()
  private readonly oldest = new OldestFirst(this.times)

  /** `request` was counted at `at` on Redis's clock. */
  remember(request: StoreRequest, at: number): void {
    const id = chargeId(request, request.now)
    const list = this.times.get(id)
    if (list !== undefined) {
      list.push(at)
      return
    }
    this.times.set(id, [at])
    if (this.times.size > MAX_CHARGES) this.oldest.evict()
  }

  /** A consume's result, passed on; remembered when Redis admitted and counted it. */
  admitted(request: StoreRequest, result: StoreResult): StoreResult {
    const { outcomes, at } = result
    if (at !== undefined && request.cost > 0 && outcomes.every((o) => o.allowed)) {
      this.remember(request, at)
    }
    return result
  }

  /** The refund at the time Redis logged its charge, where that is remembered; else as given. */
  exact(refund: StoreRefund): StoreRefund {
    if (refund.storeClock === true) return refund
    const at = this.take(refund)
    return at === undefined ? refund : { ...refund, now: at, at, storeClock: true }
  }

  /** When Redis counted the charge `refund` gives back (taken out), or undefined if unknown. */
  private take(refund: StoreRefund): number | undefined {
    if (refund.at === undefined) return undefined
    const id = chargeId(refund, refund.at)
    const list = this.times.get(id)
    if (list === undefined) return undefined
    const at = list.shift()
    if (list.length === 0) this.times.delete(id)
    return at
  }
}
