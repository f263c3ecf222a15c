/**
 * Owns `prometheusMetrics`: an `onDecision` hook that counts decisions and store latency in
 * prom-client (an optional peer, loaded on first use), and the gauges of watched sources.
 */
import type { Counter, Gauge, Histogram, Registry } from 'prom-client'
import { declareOptions } from '../declared-options'
import { invalidOption } from '../errors'
import type { DecisionEvent } from '../events'
import {
  checkNearLimitRatio,
  countersOf,
  DECISION_COUNTERS,
  DEFAULT_LATENCY_BUCKETS,
  STORE_LATENCY,
  WATCHED,
  WATCHED_TOTALS,
  type DecisionCounter,
  type WatchedMetric,
} from './names'
import { optionalPeer } from './optional-peer'
import { registerWatchList, WatchList, type WatchSource } from './watched'

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

function checkPrefix(prefix: unknown): void {
  if (typeof prefix !== 'string' || !/^[a-zA-Z_:]?[a-zA-Z0-9_:]*$/.test(prefix)) {
    invalidOption('prefix', prefix, 'a Prometheus metric name prefix ([a-zA-Z_:][a-zA-Z0-9_:]*)')
  }
}

/** prometheusMetrics' options, declared once. */
export const PROMETHEUS_OPTIONS = declareOptions<PrometheusMetricsOptions>('prometheusMetrics', {
  // null takes the default, as `value ?? default` read them before.
  registry: {
    doc: "where the metrics are registered; default prom-client's global `register`",
    orNull: true,
  },
  prefix: {
    doc: 'prepended to every metric name',
    default: 'sluice_',
    check: checkPrefix,
    orNull: true,
  },
  buckets: {
    doc: 'latency histogram buckets, in seconds',
    default: DEFAULT_LATENCY_BUCKETS,
    orNull: true,
  },
  nearLimitRatio: {
    doc: 'an admitted request is near the limit past this share used',
    default: 0.8,
    check: checkNearLimitRatio,
    orNull: true,
  },
})

/** An `onDecision` hook that records into Prometheus metrics. */
export interface PrometheusMetrics {
  (event: DecisionEvent): void
  /** The registry the metrics live in. */
  readonly registry: Registry
  /**
   * Reads `source` at each scrape: a Store (breaker state, calls in flight), a local tier
   * (leases, store calls), a Limiter (its store) or an adapter's HTTP limiter (held and waiting
   * requests, concurrency slots), labelled `name`. Watching a name again replaces its source.
   */
  watch(name: string, source: WatchSource): PrometheusMetrics
}

type PromClient = typeof import('prom-client')

/** prom-client is an optional peer: loaded on first use, so core works without it. */
const loadPromClient = optionalPeer<PromClient>('prom-client', 'prometheusMetrics()')

type PolicyMetrics = Record<DecisionCounter, Counter.Internal> & {
  latency: Histogram.Internal<'policy'>
}

/** One watch list per registry and prefix: recorders sharing the metrics share their sources. */
const watchLists = new WeakMap<Registry, Map<string, WatchList>>()

function watchListOf(registry: Registry, prefix: string): WatchList {
  let byPrefix = watchLists.get(registry)
  if (byPrefix === undefined) watchLists.set(registry, (byPrefix = new Map()))
  let list = byPrefix.get(prefix)
  if (list === undefined) byPrefix.set(prefix, (list = new WatchList()))
  return list
}

/** Registers the gauge (or total) of one watched metric, read from `list` at each scrape. */
function registerWatched(
  client: PromClient,
  registry: Registry,
  prefix: string,
  metric: WatchedMetric,
  list: WatchList,
): void {
  const [name, help, extra] = WATCHED[metric]
  if (registry.getSingleMetric(prefix + name) !== undefined) return
  const labelNames = ['name', ...extra]
  const total = WATCHED_TOTALS.has(metric)
  function collect(this: Gauge | Counter): void {
    this.reset()
    list.read((reading, source) => {
      if (reading.metric !== metric) return
      const labels = { name: source, ...reading.labels }
      if (total) (this as Counter).inc(labels, reading.value)
      else (this as Gauge).set(labels, reading.value)
    })
  }
  const config = { name: prefix + name, help, labelNames, registers: [registry], collect }
  if (total) new client.Counter(config)
  else new client.Gauge(config)
}

/**
 * A Prometheus recorder for `createLimiter({ onDecision: prometheusMetrics() })`. Counts, per
 * policy name (label `policy`; the rule's name under rules):
 * - `sluice_decisions_allowed_total`: admitted within the limits;
 * - `sluice_decisions_rejected_total`: rejected;
 * - `sluice_decisions_shadow_rejected_total`: over the limits, admitted by shadow mode;
 * - `sluice_decisions_near_limit_total`: admitted with more than 80% of the capacity used;
 * - `sluice_store_errors_total`: store calls that failed or timed out;
 * - `sluice_fallback_decisions_total`: decisions `onStoreError` made instead of the store;
 * - `sluice_store_latency_seconds`: a histogram of store call time;
 * and, for each source given to `watch` (label `name`), the gauges listed in names.ts.
 *
 * Calling it again with the same registry reuses the registered metrics, so several limiters
 * (or a reloaded module) can share them.
 */
export function prometheusMetrics(options: PrometheusMetricsOptions = {}): PrometheusMetrics {
  const given = PROMETHEUS_OPTIONS.resolve(options)
  const client = loadPromClient()
  const registry = given.registry ?? client.register
  const prefix = given.prefix as string
  const ratio = checkNearLimitRatio(given.nearLimitRatio)
  const buckets = given.buckets as readonly number[]

  function counter(name: string, help: string): Counter<'policy'> {
    const full = prefix + name
    const existing = registry.getSingleMetric(full)
    if (existing !== undefined) return existing as Counter<'policy'>
    return new client.Counter({ name: full, help, labelNames: ['policy'], registers: [registry] })
  }

  const counters = {} as Record<DecisionCounter, Counter<'policy'>>
  for (const [key, [name, help]] of Object.entries(DECISION_COUNTERS)) {
    counters[key as DecisionCounter] = counter(name, help)
  }
  const latencyName = prefix + STORE_LATENCY[0]
  const latency =
    (registry.getSingleMetric(latencyName) as Histogram<'policy'> | undefined) ??
    new client.Histogram({
      name: latencyName,
      help: STORE_LATENCY[1],
      labelNames: ['policy'],
      buckets: [...buckets],
      registers: [registry],
    })
  const watched = watchListOf(registry, prefix)
  for (const metric of Object.keys(WATCHED) as WatchedMetric[]) {
    registerWatched(client, registry, prefix, metric, watched)
  }

  // Label children per policy name: one map lookup per event instead of hashing label objects.
  const byPolicy = new Map<string, PolicyMetrics>()
  function metricsOf(policy: string): PolicyMetrics {
    let metrics = byPolicy.get(policy)
    if (metrics === undefined) {
      metrics = { latency: latency.labels(policy) } as PolicyMetrics
      for (const key of Object.keys(counters) as DecisionCounter[]) {
        metrics[key] = counters[key].labels(policy)
      }
      byPolicy.set(policy, metrics)
    }
    return metrics
  }

  const record = function recordDecision(event: DecisionEvent): void {
    const metrics = metricsOf(event.policy)
    metrics.latency.observe(event.storeLatencyMs / 1000)
    for (const counter of countersOf(event, ratio)) metrics[counter].inc()
  }
  registerWatchList(record, watched)
  const metrics: PrometheusMetrics = Object.assign(record, {
    registry,
    watch(name: string, source: WatchSource): PrometheusMetrics {
      watched.add(name, source)
      return metrics
    },
  })
  return metrics
}
