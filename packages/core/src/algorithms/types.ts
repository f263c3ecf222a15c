/**
 * Owns the contract of an algorithm: the policy numbers it reads, its state vector, decide and
 * consume, its outcome, and the outcome helpers every algorithm uses. Nothing here imports the
 * rest of core, so the algorithms and their registry sit below policy.ts.
 */

/**
 * What a transition reads of a policy (core's Policy has these and more): requests (cost
 * units) per window, the window in ms, the capacity of a meter, and sliding-window's buckets.
 */
export interface PolicyNumbers {
  readonly limit: number
  readonly windowMs: number
  readonly burst: number
  readonly precision: number
}

/** What one policy says about one request; all integers (or Infinity) so Lua can return them. */
export interface PolicyOutcome {
  allowed: boolean
  /** Whole requests (cost units) still allowed now, after this one when it was admitted. */
  remaining: number
  /**
   * ms until the policy's quota is fully restored; sliding-window: until its newest requests
   * begin to fade (at most one window, 0 once they fade; whole one bucket later).
   */
  resetMs: number
  /** 0 when allowed; else ms until a request of this cost could pass (Infinity: it never can). */
  retryAfterMs: number
  /** leaky-bucket only: ms to hold the admitted request so output leaves at `limit / window`. */
  delayMs: number
}

/**
 * A key's state for one policy: numeric slots at `base` in a flat vector (a row of a
 * Float64Array in MemoryStore, a plain array in tests). All zeros is the empty state.
 */
export type StateVector = { [index: number]: number; readonly length: number }

/** The shape of `decide` and `consume`: fills `out` for a request of `cost` at `now`. */
export type Decide = (
  state: StateVector,
  base: number,
  now: number,
  policy: PolicyNumbers,
  cost: number,
  out: PolicyOutcome,
  maxDelayMs?: number,
) => void

/**
 * One algorithm as pure transitions. `decide` only reads; `apply` writes the state an admitted
 * request leaves. Keeping them apart lets a store check every policy before it changes any
 * (all-or-nothing), and each Lua script in @sluice/redis mirrors these functions. `consume`
 * (optional) is the two in one pass, for a store deciding a single policy.
 */
export interface Algorithm {
  /** Slots the state of `policy` occupies (fixed for a given policy). */
  slots(policy: PolicyNumbers): number
  /**
   * What a request of `cost` (0 = just look) would get at `now`. Fills `out`; changes nothing.
   * `maxDelayMs` (meters only; counters ignore it): a request that does not fit now is still
   * admitted when it fits within that many ms, a reservation, with `out.delayMs` the wait.
   */
  decide: Decide
  /**
   * decide, then apply when it admitted a request of some cost: the single-policy path of a
   * store, in one pass where an algorithm has one. Leaves `out` and the state exactly as the
   * two calls would.
   */
  consume?: Decide
  /** Takes `cost` for an admitted request. Call only after `decide` admitted it. */
  apply(state: StateVector, base: number, now: number, policy: PolicyNumbers, cost: number): void
  /**
   * Gives back `cost` taken at `at`: never below empty, never into a window that has reset.
   * `at` undefined (a reward): taken from the newest usage that still counts, never below empty.
   */
  refund(
    state: StateVector,
    base: number,
    now: number,
    policy: PolicyNumbers,
    cost: number,
    at?: number,
  ): void
  /**
   * Adds `cost` to the usage at `now` whatever the limit says, but never beyond full: counters
   * up to `limit` (sliding-log: at most `limit` live timestamps), meters up to their capacity.
   * Usage already beyond full (a soft limit, a reservation) is left as it is.
   */
  penalize(state: StateVector, base: number, now: number, policy: PolicyNumbers, cost: number): void
  /** When the state is empty again (ms); 0 when it already is. Stores use it as the expiry. */
  expiresAt(state: StateVector, base: number, policy: PolicyNumbers): number
}

/** Fills `out` for a request whose cost can never fit the policy's capacity. */
export function rejectForever(out: PolicyOutcome, remaining: number, resetMs: number): void {
  out.allowed = false
  out.remaining = remaining > 0 ? remaining : 0
  out.resetMs = resetMs
  out.retryAfterMs = Infinity
  out.delayMs = 0
}

/**
 * Fills `out` for a counter window holding `count`, which ends in `untilEnd` ms: fixed-window's
 * decision, whichever moment its windows start at.
 */
export function decideWindow(
  out: PolicyOutcome,
  limit: number,
  count: number,
  cost: number,
  untilEnd: number,
): void {
  if (cost > limit) return rejectForever(out, limit - count, count > 0 ? untilEnd : 0)
  out.delayMs = 0
  if (count + cost <= limit) {
    out.allowed = true
    out.remaining = limit - count - cost
    out.resetMs = count + cost > 0 ? untilEnd : 0
    out.retryAfterMs = 0
  } else {
    out.allowed = false
    out.remaining = Math.max(0, limit - count)
    out.resetMs = untilEnd
    out.retryAfterMs = untilEnd
  }
}

/**
 * `a % m` for integers 0 <= a < 2^53 and m > 0. On values past 2^31 (ms timestamps, bucket
 * numbers) V8 compiles `%` to a call of C's fmod, about ten times slower than this; for such
 * integers the division's floor is exact.
 */
export function modulo(a: number, m: number): number {
  return a - Math.floor(a / m) * m
}

let lastDividend = NaN
let lastDivisor = NaN
let lastQuotient = 0

/**
 * floor(now / size): which window or bucket `now` falls in. Decisions of one turn share one
 * `now` (turnClock) and most share a window, so the last answer is kept: decide and apply, and
 * every key decided in that turn, then skip the division.
 */
export function windowIndex(now: number, size: number): number {
  if (now !== lastDividend || size !== lastDivisor) {
    lastDividend = now
    lastDivisor = size
    lastQuotient = Math.floor(now / size)
  }
  return lastQuotient
}

/** What `consume` does for an algorithm without a one-pass path of its own. */
export function decideThenApply(
  algorithm: Algorithm,
  s: StateVector,
  b: number,
  now: number,
  policy: PolicyNumbers,
  cost: number,
  out: PolicyOutcome,
  maxDelayMs?: number,
): void {
  algorithm.decide(s, b, now, policy, cost, out, maxDelayMs)
  if (out.allowed && cost !== 0) algorithm.apply(s, b, now, policy, cost)
}
