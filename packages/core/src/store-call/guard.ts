// A limiter's protection around its shared store, resolved once from its options.
import type { Clock } from '../clock'
import { invalidOption } from '../errors'
import type { Store } from '../store/types'
import { guardFor, type StoreGuard } from './bounded'
import { resolveHealthSettings, type StoreLogger } from './health'
import { lateRefund, type LateRefund } from './late-refund'

export interface StoreProtection {
  /** Undefined for an in-process store: nothing to time out or break. */
  readonly guard: StoreGuard | undefined
  /** Refunds a consume the store admitted after it timed out; undefined with no guard. */
  readonly undoLate: LateRefund | undefined
  readonly logger: StoreLogger
}

/** Checks `logger`, `breaker` and `maxInFlight` and builds what guards the store's calls. */
export function protectStore(
  store: Store,
  clock: Clock,
  options: { timeoutMs: number; breaker?: unknown; maxInFlight?: unknown; logger?: unknown },
  mode: string,
): StoreProtection {
  const logger = (options.logger ?? console) as StoreLogger
  if (typeof logger !== 'object' || logger === null || typeof logger.warn !== 'function') {
    invalidOption('logger', logger, 'an object with a warn(message) method')
  }
  const settings = resolveHealthSettings(options.breaker, options.maxInFlight)
  const guard = guardFor(store, options.timeoutMs, settings, logger, mode)
  const undoLate = guard === undefined ? undefined : lateRefund(store, guard, clock, logger)
  return { guard, undoLate, logger }
}
