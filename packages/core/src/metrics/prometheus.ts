/**
 * Owns `prometheusMetrics`: an `onDecision` hook that counts decisions and store latency in
 * prom-client (an optional peer, loaded on first use).
 */
import { createRequire } from 'node:module'
import type { Counter, Histogram, Registry } from 'prom-client'
import { ConfigError, invalidOption } from '../errors'
import type { DecisionEvent } from '../events'
import { checkKnownOptions } from '../options'

export interface PrometheusMetricsOptions {
  /**
   * Where the metrics are registered (serve `registry.metrics()` on /metrics).
   * @default prom-client's global `register`
   */
  registry?: Registry
  /**
   * Prepended to every metric name.
   * @default 'sluice_'
   */
  prefix?: string
  /**
   * Buckets of the store latency histogram, in seconds.
   * @default [0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1]
   */
  buckets?: readonly number[]
  /**
   * An admitted request counts as near the limit when more than this share of the binding
   * policy's capacity is used after it.
   * @default 0.8
   */
  nearLimitRatio?: number
}

/** An `onDecision` hook that records into Prometheus metrics. */
export interface PrometheusMetrics {
  (event: DecisionEvent): void
  /** The registry the metrics live in. */
  readonly registry: Registry
}

type PromClient = typeof import('prom-client')

let promClient: PromClient | undefined

/** prom-client is an optional peer: loaded on first use, so core works without it. */
function loadPromClient(): PromClient {
  if (promClient === undefined) {
    try {
      // createRequire works in the CommonJS and the ESM build alike (tsup shims __filename).
      promClient = createRequire(__filename)('prom-client') as PromClient
    } catch (error) {
      throw new ConfigError(
        'prometheusMetrics() needs the optional peer dependency `prom-client`: npm install prom-client',
        { cause: error },
      )
    }
  }
  return promClient
}

interface PolicyMetrics {
  allowed: Counter.Internal
  rejected: Counter.Internal
  shadowRejected: Counter.Internal
  nearLimit: Counter.Internal
  storeErrors: Counter.Internal
  fallback: Counter.Internal
  latency: Histogram.Internal<'policy'>
}

/**
 * A Prometheus recorder for `createLimiter({ onDecision: prometheusMetrics() })`. Counts, per
 * policy name (label `policy`):
 * - `sluice_decisions_allowed_total`: admitted within the limits;
 * - `sluice_decisions_rejected_total`: rejected;
 * - `sluice_decisions_shadow_rejected_total`: over the limits, admitted by shadow mode;
 * - `sluice_decisions_near_limit_total`: admitted with more than 80% of the capacity used;
 * - `sluice_store_errors_total`: store calls that failed or timed out;
 * - `sluice_fallback_decisions_total`: decisions `onStoreError` made instead of the store;
 * - `sluice_store_latency_seconds`: a histogram of store call time.
 *
 * Calling it again with the same registry reuses the registered metrics, so several limiters
 * (or a reloaded module) can share them.
 */
export function prometheusMetrics(options: PrometheusMetricsOptions = {}): PrometheusMetrics {
  checkKnownOptions(
    options,
    ['registry', 'prefix', 'buckets', 'nearLimitRatio'],
    'prometheusMetrics',
  )
  const client = loadPromClient()
  const registry = options.registry ?? client.register
  const prefix = options.prefix ?? 'sluice_'
  if (typeof prefix !== 'string' || !/^[a-zA-Z_:]?[a-zA-Z0-9_:]*$/.test(prefix)) {
    invalidOption('prefix', prefix, 'a Prometheus metric name prefix ([a-zA-Z_:][a-zA-Z0-9_:]*)')
  }
  const ratio = options.nearLimitRatio ?? 0.8
  if (typeof ratio !== 'number' || !(ratio >= 0 && ratio < 1)) {
    invalidOption('nearLimitRatio', ratio, 'a number from 0 up to (not including) 1')
  }
  const buckets = options.buckets ?? [
    0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
  ]

  function counter(name: string, help: string): Counter<'policy'> {
    const full = prefix + name
    const existing = registry.getSingleMetric(full)
    if (existing !== undefined) return existing as Counter<'policy'>
    return new client.Counter({ name: full, help, labelNames: ['policy'], registers: [registry] })
  }

  const allowed = counter('decisions_allowed_total', 'Requests admitted within the limits')
  const rejected = counter('decisions_rejected_total', 'Requests rejected by a limit')
  const shadowRejected = counter(
    'decisions_shadow_rejected_total',
    'Requests over a limit admitted because the limit is in shadow mode',
  )
  const nearLimit = counter(
    'decisions_near_limit_total',
    `Admitted requests after which more than ${ratio * 100}% of the capacity is used`,
  )
  const storeErrors = counter('store_errors_total', 'Store calls that failed or timed out')
  const fallback = counter(
    'fallback_decisions_total',
    'Decisions made by onStoreError (allow, deny or a fallback limiter) instead of the store',
  )
  const latencyName = `${prefix}store_latency_seconds`
  const latency =
    (registry.getSingleMetric(latencyName) as Histogram<'policy'> | undefined) ??
    new client.Histogram({
      name: latencyName,
      help: 'Time a store call took, failed ones included',
      labelNames: ['policy'],
      buckets: [...buckets],
      registers: [registry],
    })

  // Label children per policy name: one map lookup per event instead of hashing label objects.
  const byPolicy = new Map<string, PolicyMetrics>()
  function metricsOf(policy: string): PolicyMetrics {
    let metrics = byPolicy.get(policy)
    if (metrics === undefined) {
      metrics = {
        allowed: allowed.labels(policy),
        rejected: rejected.labels(policy),
        shadowRejected: shadowRejected.labels(policy),
        nearLimit: nearLimit.labels(policy),
        storeErrors: storeErrors.labels(policy),
        fallback: fallback.labels(policy),
        latency: latency.labels(policy),
      }
      byPolicy.set(policy, metrics)
    }
    return metrics
  }

  const record = function recordDecision(event: DecisionEvent): void {
    const metrics = metricsOf(event.policy)
    metrics.latency.observe(event.storeLatencyMs / 1000)
    if (event.storeError !== undefined) metrics.storeErrors.inc()
    if (event.degraded) metrics.fallback.inc()
    else if (event.storeError !== undefined) return // 'throw': nothing was decided
    if (event.allowed) {
      metrics.allowed.inc()
      if (event.capacity - event.remaining > ratio * event.capacity) metrics.nearLimit.inc()
    } else if (event.shadow) {
      metrics.shadowRejected.inc()
    } else {
      metrics.rejected.inc()
    }
  }
  return Object.assign(record, { registry })
}
