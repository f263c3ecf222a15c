/**
 * True for a promise from any realm: under Jest, Node's own promises (timers/promises, say) are
 * not instances of the test's `Promise`, so the hot paths test for `then` instead.
 */
export function isPromise<T>(value: T | Promise<T>): value is Promise<T> {
  // Not `value?.then`: core's CommonJS chunks pass through sucrase (tsup's CommonJS splitting),
  // which turns `?.` into a helper call that allocates an array and a closure, on every decision.
  return (
    value !== null &&
    value !== undefined &&
    typeof (value as { then?: unknown }).then === 'function'
  )
}
