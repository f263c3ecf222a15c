/** The six algorithms. See docs/algorithms.md for how each decides and when to pick it. */
export type AlgorithmName =
  'fixed-window' | 'sliding-window' | 'sliding-log' | 'token-bucket' | 'leaky-bucket' | 'gcra'

export const ALGORITHMS: readonly AlgorithmName[] = [
  'fixed-window',
  'sliding-window',
  'sliding-log',
  'token-bucket',
  'leaky-bucket',
  'gcra',
]

/** Where fixed-window's windows start: see LimitOptions.anchor. */
export type WindowAnchor = 'clock' | 'first-request'

export const WINDOW_ANCHORS: readonly WindowAnchor[] = ['clock', 'first-request']

/** Algorithms whose capacity is `burst` and whose state drains continuously at `limit / window`. */
export const METER_ALGORITHMS: ReadonlySet<AlgorithmName> = new Set([
  'token-bucket',
  'leaky-bucket',
  'gcra',
])

/**
 * One limit, validated and normalised: every number a positive integer. This is what stores see.
 *
 * `id` names the state: two policies with the same id share counters, so it is derived from
 * everything that changes how state is read (algorithm, limit, window, burst, precision,
 * anchor).
 * Throttling (soft, elastic) scales `limit` and `burst` per call but keeps `id`, so the scaled
 * and the nominal policy read the same state.
 */
export interface Policy {
  /** Set for a `concurrency` limit (requests in flight, not per window). */
  readonly kind?: 'concurrency'
  readonly id: string
  /** Shown in `RateLimit-Policy` headers and metrics; defaults to e.g. `100-per-1m`. */
  readonly name: string
  readonly algorithm: AlgorithmName
  /** Requests (cost units) per window; for meters, the refill rate is `limit / windowMs`. */
  readonly limit: number
  readonly windowMs: number
  /** Capacity of token-bucket, gcra and leaky-bucket (queue size for leaky-bucket); equals `limit` for the counter algorithms. */
  readonly burst: number
  /** Sub-windows of `sliding-window` (1 = the classic two counters); 1 for every other algorithm. */
  readonly precision: number
  /** Where fixed-window's windows start; `'clock'` for every other algorithm. */
  readonly anchor: WindowAnchor
}

/**
 * Largest `capacity x window` the narrow arithmetic takes: below it every step is an exact
 * integer in a double and in Lua. Past it a policy is wide (isWide): exact BigInt arithmetic in
 * core, and stores that compute in doubles elsewhere (RedisStore's Lua) hand it to core.
 */
export const MAX_SAFE_PRODUCT = 2 ** 50

/** Largest `limit`, `burst` and cost: every count and every slot of a state stays exact. */
export const MAX_UNITS = 2 ** 50

/**
 * Whether `policy` passes MAX_SAFE_PRODUCT: budgets such as 10^9 tokens a day. Its meters then
 * run the wide transitions (algorithms/wide-meter.ts); the counters need none (their products
 * go through algorithms/exact.ts).
 */
export function isWide(policy: Pick<Policy, 'limit' | 'burst' | 'windowMs'>): boolean {
  return (
    (policy.limit > policy.burst ? policy.limit : policy.burst) * policy.windowMs > MAX_SAFE_PRODUCT
  )
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
