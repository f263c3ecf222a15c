/**
 * Owns the metric names, help texts and label names every recorder shares (prom-client and
 * OpenTelemetry alike), and the decision-to-metric mapping, so both export the same series.
 */
import { invalidOption } from '../errors'
import type { DecisionEvent } from '../events'

/** The counters a decision adds to, each with the label `policy` (the rule's name under rules). */
export const DECISION_COUNTERS = {
  allowed: ['decisions_allowed_total', 'Requests admitted within the limits'],
  rejected: ['decisions_rejected_total', 'Requests rejected by a limit'],
  shadowRejected: [
    'decisions_shadow_rejected_total',
    'Requests over a limit admitted because the limit is in shadow mode',
  ],
  nearLimit: ['decisions_near_limit_total', 'Admitted requests near the limit (nearLimitRatio)'],
  storeErrors: ['store_errors_total', 'Store calls that failed or timed out'],
  fallback: [
    'fallback_decisions_total',
    'Decisions made by onStoreError (allow, deny or a fallback limiter) instead of the store',
  ],
} as const

export type DecisionCounter = keyof typeof DECISION_COUNTERS

export const STORE_LATENCY = [
  'store_latency_seconds',
  'Time a store call took, failed ones included',
] as const

/** Seconds; from 0.1 ms (an in-process store) to 1 s (a store about to time out). */
export const DEFAULT_LATENCY_BUCKETS: readonly number[] = [
  0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
]

/**
 * The gauges read from watched sources at collection time, each with the label `name` (the name
 * given to `watch`), plus the labels listed. Counters among them are totals kept by the source.
 */
export const WATCHED = {
  breakerState: [
    'breaker_state',
    'Circuit breaker of the store: 0 closed, 1 half-open, 2 open',
    [],
  ],
  storeCallsInFlight: ['store_calls_in_flight', 'Store calls sent and not yet answered', []],
  requestsHeld: ['requests_held', 'Admitted requests held for their shaping delay', []],
  requestsWaiting: ['requests_waiting', 'Requests queued for a slot (queue or maxWaitMs)', []],
  slotsInFlight: ['concurrency_slots_in_flight', 'Concurrency slots this process holds', []],
  releasesIgnored: [
    'concurrency_releases_ignored_total',
    'Slot releases that found nothing to release (a second call, or a lease that had lapsed)',
    [],
  ],
  tierLeasedUnits: ['tier_leased_units', 'Units leased by the local tier and not yet spent', []],
  tierStoreCalls: [
    'tier_store_calls_total',
    'Calls the local tier sent to the shared store, by call (consume or refund)',
    ['call'],
  ],
  tierLeasedDecisions: [
    'tier_leased_decisions_total',
    'Decisions the local tier answered from a lease, with no store call',
    [],
  ],
  topRefused: [
    'top_refused',
    'Refusals of the keys a limiter refused most in its recent interval (topRefused; keys as its reveal option shows them)',
    ['key'],
  ],
} as const

export type WatchedMetric = keyof typeof WATCHED

/** Counters among WATCHED (monotonic totals); the rest are gauges. */
export const WATCHED_TOTALS: ReadonlySet<WatchedMetric> = new Set([
  'tierStoreCalls',
  'tierLeasedDecisions',
  'releasesIgnored',
])

/** The value of `breaker_state` for each state. */
export const BREAKER_STATE_VALUE = { closed: 0, 'half-open': 1, open: 2 } as const

/** Which counters one decision adds 1 to, in the order the Prometheus recorder always used. */
export function countersOf(event: DecisionEvent, nearLimitRatio: number): DecisionCounter[] {
  const hit: DecisionCounter[] = []
  if (event.storeError !== undefined) hit.push('storeErrors')
  if (event.degraded) hit.push('fallback')
  else if (event.storeError !== undefined) return hit // 'throw': nothing was decided
  if (event.allowed) {
    hit.push('allowed')
    if (event.capacity - event.remaining > nearLimitRatio * event.capacity) hit.push('nearLimit')
  } else hit.push(event.shadow ? 'shadowRejected' : 'rejected')
  return hit
}

/** Checks `nearLimitRatio` once, at creation. */
export function checkNearLimitRatio(value: unknown): number {
  const ratio = value ?? 0.8
  if (typeof ratio !== 'number' || !(ratio >= 0 && ratio < 1)) {
    invalidOption('nearLimitRatio', ratio, 'a number from 0 up to (not including) 1')
  }
  return ratio
}
