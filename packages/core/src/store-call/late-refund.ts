// Undoing what a store did late: a consume that timed out (its caller was answered without the
// store) and that the store then admitted anyway is refunded, so it is never charged.
import type { Clock } from '../clock'
import type { Store, StoreRefund, StoreRequest, StoreResult } from '../store/types'
import { boundedStoreCall, type StoreGuard } from './bounded'
import type { StoreLogger } from './health'

export type LateRefund = (request: StoreRequest, result: StoreResult) => void

export function lateRefund(
  store: Store,
  guard: StoreGuard,
  clock: Clock,
  logger: StoreLogger,
): LateRefund {
  return function undoLate(request, result) {
    if (request.cost <= 0) return
    for (const outcome of result.outcomes) if (!outcome.allowed) return
    const now = clock()
    // A store on its own clock charged when the command ran, moments before this reply came;
    // any other charged at the request's `now`.
    const refund: StoreRefund = { ...request, now, at: store.ownClock === true ? now : request.now }
    boundedStoreCall(() => store.refund(refund), guard, undefined, true).catch((error: unknown) => {
      logger.warn(
        `[sluice] a late charge of ${request.cost} to key ${JSON.stringify(request.key)} could not be refunded: ${String(error)}`,
      )
    })
  }
}
