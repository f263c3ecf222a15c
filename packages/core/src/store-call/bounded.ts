// One store call under its limiter's guard: the timeout, the store's breaker and in-flight bound.
import { StoreError, withoutStack } from '../errors'
import type { Store } from '../store/types'
import type { WaitUntil } from './wait-until'
import { deadlinesFor, type Deadlines } from './deadlines'
import { healthOf, type StoreHealth, type StoreHealthSettings, type StoreLogger } from './health'

/** What a limiter calls a shared store under; undefined for in-process stores (they cannot hang). */
export interface StoreGuard {
  readonly deadlines: Deadlines
  readonly health: StoreHealth
  /** The onStoreError in force, as the outage log line names it. */
  readonly mode: string
}

/** The guard of a limiter on `store`, or undefined when the store is in-process. */
export function guardFor(
  store: Store,
  timeoutMs: number,
  settings: StoreHealthSettings,
  logger: StoreLogger,
  mode: string,
): StoreGuard | undefined {
  if (store.local === true) return undefined
  return { deadlines: deadlinesFor(timeoutMs), health: healthOf(store, settings, logger), mode }
}

/** A store failure as a StoreError (wrapped, with the original as `cause`, unless it is one). */
export function toStoreError(error: unknown): StoreError {
  return error instanceof StoreError
    ? error
    : withoutStack(() => new StoreError('store call failed', { cause: error }))
}

/**
 * Runs a store call within the guard's `timeoutMs`, turning every failure into a StoreError. A
 * call the breaker or the in-flight bound refuses is not sent at all. `onLate` receives the
 * store's reply to a call that had already timed out (its caller was answered without the
 * store), so that what the store did late can be undone; the promise it may return is that
 * undoing. `always`: send even while the breaker is open (the undoing of a late reply: the
 * store has just answered). `waitUntil`: given, when the call times out, the promise of the
 * late reply and its undoing, so that a runtime which cancels I/O pending after the response
 * (Cloudflare Workers) keeps them running.
 */
export function boundedStoreCall<T>(
  call: () => Promise<T>,
  guard: StoreGuard | undefined,
  onLate?: (value: T) => unknown,
  always = false,
  waitUntil?: WaitUntil,
): Promise<T> {
  if (guard === undefined) {
    try {
      return call()
    } catch (error) {
      return Promise.reject(toStoreError(error))
    }
  }
  const health = guard.health
  const kind = always ? 0 : health.admit()
  if (kind instanceof StoreError) return Promise.reject(kind)
  let pending: Promise<T>
  try {
    pending = call()
  } catch (error) {
    const storeError = toStoreError(error)
    health.failed(kind, storeError, guard.mode)
    return Promise.reject(storeError)
  }
  health.inFlight++
  const queue = guard.deadlines
  return new Promise<T>((resolve, reject) => {
    const inFlight = queue.add((timeout) => {
      health.failed(kind, timeout, guard.mode)
      // Handed over before the caller is answered: the request is still open.
      if (waitUntil !== undefined) health.handOver(waitUntil, late)
      reject(timeout)
    })
    // Settles after the reply, and after what onLate started: what a timed-out call leaves.
    const late = pending.then(
      (value) => {
        health.inFlight--
        if (inFlight.settled) return onLate === undefined ? undefined : onLate(value)
        queue.settle(inFlight)
        health.succeeded(kind)
        resolve(value)
      },
      (error: unknown) => {
        health.inFlight--
        if (inFlight.settled) return
        queue.settle(inFlight)
        const storeError = toStoreError(error)
        health.failed(kind, storeError, guard.mode)
        reject(storeError)
      },
    )
  })
}
