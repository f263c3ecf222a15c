/**
 * Owns the `onDecision` events: their shape, and the reporter that builds them and survives a
 * failing hook.
 */
import type { StoreError } from './errors'
import type { Policy } from './policy'

/**
 * What one `consume` decided, as `onDecision` hooks see it. Built only when a hook is set.
 *
 * Three outcomes are told apart by `allowed` and `shadow`: admitted within the limits
 * (`allowed`), rejected (`!allowed && !shadow`), and over the limits but admitted because the
 * limiter is in shadow mode (`!allowed && shadow`).
 */
export interface DecisionEvent {
  /**
   * The key as passed to `consume` (without the limiter's `prefix`). For a rules limiter, the
   * matched rule's state key (`api|user=42`).
   */
  readonly key: string
  /**
   * Name of the binding policy (the one that rejected, or the one with the fewest remaining).
   * For a rules limiter, the name of the rule this event is about (one event per matched rule).
   */
  readonly policy: string
  /**
   * What the limits said. In shadow mode this is the verdict that was not enforced: the
   * request was admitted either way. With `onStoreError: 'throw'` and a failed store it is
   * false (nothing was admitted; `storeError` is set and `degraded` false).
   */
  readonly allowed: boolean
  /** True when the limiter (or the rule, `shadow_mode: true`) is in shadow mode: it blocked nothing. */
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

/** What a reporter needs of a decision: a Decision, or one policy's PolicyDecision. */
export interface DecidedOutcome {
  readonly allowed: boolean
  readonly remaining: number
}

/**
 * Builds one DecisionEvent and hands it to the hook. `decided` is undefined when nothing was
 * decided (a store failure with `onStoreError: 'throw'`): the event then says not allowed, 0
 * remaining.
 */
export type DecisionReporter = (
  key: string,
  policy: Policy,
  decided: DecidedOutcome | undefined,
  shadow: boolean,
  cost: number,
  storeLatencyMs: number,
  degraded: boolean,
  storeError: StoreError | undefined,
) => void

/**
 * The one place DecisionEvents are built (plain and rules limiters alike). A hook that throws
 * never changes a decision: its first failure is reported once, as a process warning.
 */
export function createDecisionReporter(hook: DecisionHook): DecisionReporter {
  let hookFailed = false
  return function report(key, policy, decided, shadow, cost, storeLatencyMs, degraded, storeError) {
    const event: DecisionEvent = {
      key,
      policy: policy.name,
      allowed: decided === undefined ? false : decided.allowed,
      shadow,
      limit: policy.limit,
      capacity: policy.burst,
      remaining: decided === undefined ? 0 : decided.remaining,
      cost,
      storeLatencyMs,
      degraded,
      storeError,
    }
    try {
      hook(event)
    } catch (error) {
      if (!hookFailed) {
        hookFailed = true
        sluiceWarning(
          `sluice: the onDecision hook threw (reported once; decisions are unaffected): ${String(error)}`,
        )
      }
    }
  }
}

/** A process warning on Node; where there is no process (Workers, Deno), the console. */
export function sluiceWarning(message: string): void {
  if (typeof process === 'object' && typeof process.emitWarning === 'function') {
    process.emitWarning(message, 'SluiceWarning')
  } else console.warn(`SluiceWarning: ${message}`)
}
