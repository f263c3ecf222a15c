/**
 * Owns the checks a limiter makes of its options and of each call's arguments: the store, the
 * onStoreError mode, costs, a consume's waitUntil, durations, keys, and what an aborted wait
 * rejects with.
 */
import { describeValue, invalidOption, SluiceError } from '../errors'
import { checkFiniteNumber, checkPositiveInteger } from '../option-checks'
import type { StoreErrorMode, WaitUntil } from '../options'
import type { Store } from '../store/types'

export function checkStore(store: unknown): Store {
  const candidate = store as Partial<Store> | null
  if (
    typeof candidate !== 'object' ||
    candidate === null ||
    typeof candidate.consume !== 'function' ||
    typeof candidate.peek !== 'function' ||
    typeof candidate.reset !== 'function' ||
    typeof candidate.refund !== 'function'
  ) {
    invalidOption('store', store, 'a Store (an object with consume, peek, refund and reset)')
  }
  return store as Store
}

export function checkStoreErrorMode(mode: unknown): StoreErrorMode {
  if (mode === 'throw' || mode === 'allow' || mode === 'deny') return mode
  if (
    typeof mode === 'object' &&
    mode !== null &&
    typeof (mode as { consume?: unknown }).consume === 'function'
  ) {
    return mode as StoreErrorMode
  }
  return invalidOption('onStoreError', mode, "'throw', 'allow', 'deny' or a fallback Limiter")
}

/** onStoreError as the outage log line names it. */
export function describeMode(mode: StoreErrorMode): string {
  return typeof mode === 'string' ? `'${mode}'` : 'a fallback limiter'
}

/** Throws a SluiceError (ERR_SLUICE_ARGUMENT) naming the argument and the value. */
export function badArgument(name: string, value: unknown, expected: string): never {
  throw new SluiceError(
    'ERR_SLUICE_ARGUMENT',
    `\`${name}\` must be ${expected}; got ${describeValue(value)}`,
  )
}

/** A consume's `waitUntil`: undefined or a function (it is called only when a call times out). */
export function checkWaitUntil(waitUntil: unknown): WaitUntil | undefined {
  if (waitUntil !== undefined && typeof waitUntil !== 'function') {
    badArgument('waitUntil', waitUntil, 'a function (promise) => void, e.g. ctx.waitUntil')
  }
  return waitUntil as WaitUntil | undefined
}

export function checkCost(cost: unknown): number {
  return checkPositiveInteger(cost, 'cost', 'a positive integer', badArgument)
}

export function checkMs(value: unknown, name: string, allowZero: boolean): number {
  const what = allowZero ? 'a finite number of ms >= 0' : 'a positive finite number of ms'
  return checkFiniteNumber(value, name, what, allowZero, badArgument)
}

/** The error an aborted wait rejects with when its signal carries no reason of its own. */
export function abortError(): SluiceError {
  const error = new SluiceError('ERR_SLUICE_ABORTED', 'the wait was aborted (AbortError)')
  error.name = 'AbortError'
  return error
}

/**
 * What an aborted wait rejects with: the reason given to `abort(reason)`, or, for a bare
 * `abort()` (whose reason is the platform's DOMException), a SluiceError named AbortError.
 */
export function abortReason(signal: AbortSignal): unknown {
  const reason: unknown = signal.reason
  if (reason === undefined || (reason instanceof DOMException && reason.name === 'AbortError')) {
    const error = abortError()
    if (reason !== undefined) (error as { cause?: unknown }).cause = reason
    return error
  }
  return reason
}

export function checkKey(key: unknown): string {
  if (typeof key !== 'string') {
    throw new SluiceError(
      'ERR_SLUICE_ARGUMENT',
      `\`key\` must be a string; got ${describeValue(key)}`,
    )
  }
  return key
}
