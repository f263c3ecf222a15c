/** Milliseconds since the Unix epoch. Tests inject a fake one so algorithm tests are exact and instant. */
export type Clock = () => number

/** Reads the system clock on every call. */
export const systemClock: Clock = () => Date.now()

/**
 * Where monotonic time comes from: `performance` by default (a runtime without one, or without
 * its `timeOrigin`, decides on `Date.now()`), replaceable for tests (a test cannot step the
 * real clocks, so it steps `Date.now` and holds this one still).
 */
export interface MonotonicSource {
  readonly timeOrigin: number
  now(): number
}

/** `performance` where the runtime has one with a time origin; else none (Date.now is used). */
function runtimeSource(): MonotonicSource | undefined {
  const source = (globalThis as { performance?: Partial<MonotonicSource> }).performance
  return typeof source?.timeOrigin === 'number' && typeof source.now === 'function'
    ? (source as MonotonicSource)
    : undefined
}

let monotonic: MonotonicSource | undefined = runtimeSource()
/**
 * The source's `timeOrigin`, read once: Node's `performance.timeOrigin` is a getter that
 * validates its receiver and asks the runtime on every read, a fifth of a clock read.
 */
let origin = monotonic === undefined ? 0 : monotonic.timeOrigin

/** Replaces the monotonic source (tests); returns the one it replaced. */
export function setMonotonicSource(
  source: MonotonicSource | undefined,
): MonotonicSource | undefined {
  const previous = monotonic
  monotonic = source
  origin = source === undefined ? 0 : source.timeOrigin
  return previous
}

/**
 * Epoch-like ms that never step: the wall clock when the process started plus the time elapsed
 * since on the monotonic clock. A wall clock stepped either way (NTP, a restored VM) does not
 * move it, so in-process decisions neither reopen nor skip a window. It drifts from the wall
 * clock by the steps and slews since the process started, so processes that must agree on
 * time (a shared store deciding on the client's clock) use the wall clock instead.
 */
export const monotonicClock: Clock = () =>
  monotonic === undefined ? Date.now() : Math.floor(origin + monotonic.now())

let turnNow = 0
let turnCached = false
let monotonicTurnNow = 0
let monotonicTurnCached = false

function endTurn(): void {
  turnCached = false
}

function endMonotonicTurn(): void {
  monotonicTurnCached = false
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

/**
 * turnClock on the monotonic clock (monotonicClock): the default clock of a limiter on an
 * in-process store (MemoryStore), where nothing outside the process needs to agree with it.
 */
export const monotonicTurnClock: Clock = () => {
  if (!monotonicTurnCached) {
    monotonicTurnNow = monotonicClock()
    monotonicTurnCached = true
    void settled.then(endMonotonicTurn)
  }
  return monotonicTurnNow
}
