import type { StoreError } from './errors'

/**
 * What one `consume` decided, as `onDecision` hooks see it. Built only when a hook is set.
 *
 * Three outcomes are told apart by `allowed` and `shadow`: admitted within the limits
 * (`allowed`), rejected (`!allowed && !shadow`), and over the limits but admitted because the
 * limiter is in shadow mode (`!allowed && shadow`).
 */
export interface DecisionEvent {
  /** The key as passed to `consume` (without the limiter's `prefix`). */
  readonly key: string
  /** Name of the binding policy (the one that rejected, or the one with the fewest remaining). */
  readonly policy: string
  /**
   * What the limits said. In shadow mode this is the verdict that was not enforced: the
   * request was admitted either way. With `onStoreError: 'throw'` and a failed store it is
   * false (nothing was admitted; `storeError` is set and `degraded` false).
   */
  readonly allowed: boolean
  /** True when the limiter is in shadow mode (`shadow: true`): nothing was blocked. */
  readonly shadow: boolean
  /** Nominal limit of the binding policy (requests per window). */
  readonly limit: number
  /** What `remaining` counts down from: `burst` for token-bucket, leaky-bucket and gcra, else `limit`. */
  readonly capacity: number
  /** Whole requests still allowed under the binding policy, after this one. */
  readonly remaining: number
  /** Cost units the request asked for. */
  readonly cost: number
  /** Time the store call took (ms, fractional), including a failed or timed-out one. */
  readonly storeLatencyMs: number
  /** True when the store failed and `onStoreError` (allow, deny or a fallback limiter) decided. */
  readonly degraded: boolean
  /** The store failure behind this decision, when there was one. */
  readonly storeError: StoreError | undefined
}

/** Receives every decision of a limiter; see `LimiterOptions.onDecision`. */
export type DecisionHook = (event: DecisionEvent) => void
