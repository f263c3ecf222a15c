/** Milliseconds since the Unix epoch. Tests inject a fake one so algorithm tests are exact and instant. */
export type Clock = () => number

/** Reads the system clock on every call. */
export const systemClock: Clock = () => Date.now()

let turnNow = 0
let turnCached = false

function endTurn(): void {
  turnCached = false
}

/**
 * Ends the cached turn at the next microtask checkpoint. A reaction on a settled promise is a
 * plain V8 microtask; Node's queueMicrotask wraps each callback in an AsyncResource and a bound
 * function, which costs about 150 ns more per turn (per request, in an HTTP server).
 */
const settled = Promise.resolve()

/**
 * The default clock: reads `Date.now()` once per synchronous turn of the event loop and
 * answers every later call of that turn from it (the cache ends at the next microtask
 * checkpoint). Decisions made in one turn are made at one instant, which they effectively
 * are; a clock read costs ~50 ns on some virtual machines, as much as the decision itself.
 */
export const turnClock: Clock = () => {
  if (!turnCached) {
    turnNow = Date.now()
    turnCached = true
    void settled.then(endTurn)
  }
  return turnNow
}
