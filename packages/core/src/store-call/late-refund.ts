// Undoing what a store did late: a consume that timed out (its caller was answered without the
// store) and that the store then admitted anyway is refunded, so it is never charged.
import type { Clock } from '../clock'
import type { Store, StoreRefund, StoreRequest, StoreResult } from '../store/types'
import { boundedStoreCall, type StoreGuard } from './bounded'
import type { StoreLogger } from './health'

/** Undoes a late consume's charge; the promise of that refund (it never rejects), if one went. */
export type LateRefund = (request: StoreRequest, result: StoreResult) => Promise<void> | undefined

export function lateRefund(
  store: Store,
  guard: StoreGuard,
  clock: Clock,
  logger: StoreLogger,
): LateRefund {
  return function undoLate(request, result) {
    if (request.cost <= 0) return undefined
    for (const outcome of result.outcomes) if (!outcome.allowed) return undefined
    const refund: StoreRefund =
      result.at === undefined
        ? arrivalRefund(request, store, clock())
        : chargedRefund(request, result.at)
    // Returned, not dropped: a runtime that cuts pending I/O (waitUntil) must keep it running.
    return boundedStoreCall(() => store.refund(refund), guard, undefined, true).catch(
      (error: unknown) => {
        logger.warn(
          `[sluice] a late charge of ${request.cost} to key ${JSON.stringify(request.key)} could not be refunded: ${String(error)}`,
        )
      },
    )
  }
}

/** The refund of the charge the store says it made at `at` on its own clock: exactly there. */
function chargedRefund(request: StoreRequest, at: number): StoreRefund {
  return { ...request, now: at, at, storeClock: true }
}

/**
 * A store that does not say when it charged: one on the requests' clock charged at the
 * request's `now`; one on its own clock when the command ran, moments before this reply came.
 */
function arrivalRefund(request: StoreRequest, store: Store, now: number): StoreRefund {
  return { ...request, now, at: store.ownClock === true ? now : request.now }
}
