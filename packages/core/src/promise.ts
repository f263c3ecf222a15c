/**
 * True for a promise from any realm: under Jest, Node's own promises (timers/promises, say) are
 * not instances of the test's `Promise`, so the hot paths test for `then` instead.
 */
export function isPromise<T>(value: T | Promise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | null | undefined)?.then === 'function'
}
