import { isWide, MAX_SAFE_PRODUCT } from './algorithms/exact'
import { ALGORITHM_NAMES, namesIn, type AlgorithmName } from './algorithms/registry'

export type { AlgorithmName } from './algorithms/registry'
export type { PolicyOutcome } from './algorithms/types'
export { isWide, MAX_SAFE_PRODUCT }

/** Every algorithm, as the registry lists them (algorithms/registry.ts). */
export const ALGORITHMS: readonly AlgorithmName[] = ALGORITHM_NAMES

/** Where fixed-window's windows start: see LimitOptions.anchor. */
export type WindowAnchor = 'clock' | 'first-request'

export const WINDOW_ANCHORS: readonly WindowAnchor[] = ['clock', 'first-request']

/** Algorithms whose capacity is `burst` and whose state drains continuously at `limit / window`. */
export const METER_ALGORITHMS: ReadonlySet<AlgorithmName> = new Set(namesIn('meter'))

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

/** Largest `limit`, `burst` and cost: every count and every slot of a state stays exact. */
export const MAX_UNITS = 2 ** 50
