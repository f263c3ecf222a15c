/**
 * Owns `openTelemetryMetrics`: an `onDecision` hook that records the same series as
 * `prometheusMetrics` through an OpenTelemetry meter (@opentelemetry/api, an optional peer loaded
 * on first use), and, when asked, one span per store call.
 */
import { invalidOption } from '../errors'
import { sluiceWarning, type DecisionEvent } from '../events'
import type { StoreLogger } from '../store-call/health'
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
import type {
  OtelApi,
  OtelAttributes,
  OtelCounter,
  OtelHistogram,
  OtelMeter,
  OtelTracer,
} from './otel-types'
import { optionalPeer } from './optional-peer'
import { registerWatchList, WatchList, type WatchSource } from './watched'

export interface OpenTelemetryMetricsOptions {
  /**
   * Where the instruments are created.
   * @default `metrics.getMeter('@sluice/core')` of @opentelemetry/api (the global meter provider)
   */
  meter?: OtelMeter
  /**
   * Prepended to every instrument name, as `prometheusMetrics` does, so both export the same names.
   * @default 'sluice_'
   */
  prefix?: string
  /**
   * Bucket boundaries of the store latency histogram, in seconds (a hint the SDK's views may override).
   * @default [0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1]
   */
  buckets?: readonly number[]
  /**
   * An admitted request counts as near the limit when more than this share of the binding
   * policy's capacity is used after it.
   * @default 0.8
   */
  nearLimitRatio?: number
  /**
   * Opt-in tracing: one span `sluice.store.consume` per store call (policy, outcome, and an
   * error status when the store failed; never the key). `true` takes the global tracer.
   * @default undefined (no spans)
   */
  tracer?: OtelTracer | true
  /**
   * Where a failing meter or tracer is reported (once; decisions are never affected).
   * @default a process warning
   */
  logger?: StoreLogger
}

/** An `onDecision` hook that records through OpenTelemetry. */
export interface OpenTelemetryMetrics {
  (event: DecisionEvent): void
  /** The meter the instruments were created on. */
  readonly meter: OtelMeter
  /**
   * Reads `source` at each collection: a Store (breaker state, calls in flight), a local tier
   * (leases, store calls), a Limiter (its store) or an adapter's HTTP limiter (held and waiting
   * requests, concurrency slots), labelled `name`. Watching a name again replaces its source.
   */
  watch(name: string, source: WatchSource): OpenTelemetryMetrics
}

/** @opentelemetry/api is an optional peer: loaded only when a default meter or tracer is needed. */
const loadOtelApi = optionalPeer<OtelApi>(
  '@opentelemetry/api',
  'openTelemetryMetrics() without a `meter`',
)

/** SpanStatusCode.ERROR of @opentelemetry/api. */
const SPAN_ERROR = 2

function checkPrefix(prefix: unknown): string {
  if (typeof prefix !== 'string' || !/^[a-zA-Z_][a-zA-Z0-9_.]*$|^$/.test(prefix)) {
    invalidOption('prefix', prefix, 'an instrument name prefix ([a-zA-Z_][a-zA-Z0-9_.]*)')
  }
  return prefix
}

function checkMeter(meter: unknown): OtelMeter {
  if (typeof (meter as OtelMeter | undefined)?.createCounter !== 'function') {
    invalidOption('meter', meter, 'an OpenTelemetry Meter (metrics.getMeter(...))')
  }
  return meter as OtelMeter
}

function checkTracer(tracer: unknown): OtelTracer | undefined {
  if (tracer === undefined) return undefined
  if (tracer === true) return loadOtelApi().trace.getTracer('@sluice/core')
  if (typeof (tracer as OtelTracer).startSpan !== 'function') {
    invalidOption('tracer', tracer, 'an OpenTelemetry Tracer, true or unset')
  }
  return tracer as OtelTracer
}

/** The label of a span's outcome, as the decision counters tell outcomes apart. */
function outcomeOf(event: DecisionEvent): string {
  if (event.storeError !== undefined && !event.degraded) return 'error'
  if (event.allowed) return 'allowed'
  return event.shadow ? 'shadow_rejected' : 'rejected'
}

/**
 * An OpenTelemetry recorder for `createLimiter({ onDecision: openTelemetryMetrics({ meter }) })`:
 * the counters, histogram and gauges `prometheusMetrics` exports, under the same names and
 * labels. A meter that throws never changes a decision: the first failure is logged, once.
 */
export function openTelemetryMetrics(
  options: OpenTelemetryMetricsOptions = {},
): OpenTelemetryMetrics {
  const meter = checkMeter(options.meter ?? loadOtelApi().metrics.getMeter('@sluice/core'))
  const prefix = checkPrefix(options.prefix ?? 'sluice_')
  const ratio = checkNearLimitRatio(options.nearLimitRatio)
  const tracer = checkTracer(options.tracer)
  const warn = options.logger === undefined ? sluiceWarning : (m: string) => options.logger!.warn(m)
  const buckets = [...(options.buckets ?? DEFAULT_LATENCY_BUCKETS)]
  const watched = new WatchList()

  let reported = false
  function failed(error: unknown): void {
    if (reported) return
    reported = true
    warn(
      `[sluice] the OpenTelemetry meter or tracer threw (reported once; decisions are unaffected): ${String(error)}`,
    )
  }

  let counters: Record<DecisionCounter, OtelCounter> | undefined
  let latency: OtelHistogram | undefined
  try {
    const made = {} as Record<DecisionCounter, OtelCounter>
    for (const [counter, [name, description]] of Object.entries(DECISION_COUNTERS)) {
      made[counter as DecisionCounter] = meter.createCounter(prefix + name, { description })
    }
    latency = meter.createHistogram(prefix + STORE_LATENCY[0], {
      description: STORE_LATENCY[1],
      unit: 's',
      advice: { explicitBucketBoundaries: buckets },
    })
    counters = made
    for (const metric of Object.keys(WATCHED) as WatchedMetric[]) observeWatched(metric)
  } catch (error) {
    failed(error)
  }

  function observeWatched(metric: WatchedMetric): void {
    const [name, description] = WATCHED[metric]
    const create = WATCHED_TOTALS.has(metric) ? 'createObservableCounter' : 'createObservableGauge'
    meter[create](prefix + name, { description }).addCallback((result) => {
      watched.read((reading, source) => {
        if (reading.metric === metric)
          result.observe(reading.value, { name: source, ...reading.labels })
      })
    })
  }

  // One attributes object per policy name: no allocation per event.
  const labels = new Map<string, OtelAttributes>()
  function labelsOf(policy: string): OtelAttributes {
    let attributes = labels.get(policy)
    if (attributes === undefined) labels.set(policy, (attributes = { policy }))
    return attributes
  }

  function span(event: DecisionEvent): void {
    const end = Date.now()
    const started = tracer!.startSpan('sluice.store.consume', {
      startTime: end - event.storeLatencyMs,
      attributes: { 'sluice.policy': event.policy, 'sluice.outcome': outcomeOf(event) },
    })
    if (event.storeError !== undefined) {
      started.setStatus({ code: SPAN_ERROR, message: event.storeError.message })
    }
    started.end(end)
  }

  const record = function recordDecision(event: DecisionEvent): void {
    if (counters === undefined) return
    try {
      const attributes = labelsOf(event.policy)
      latency!.record(event.storeLatencyMs / 1000, attributes)
      for (const counter of countersOf(event, ratio)) counters[counter].add(1, attributes)
      if (tracer !== undefined) span(event)
    } catch (error) {
      failed(error)
    }
  }
  registerWatchList(record, watched)
  const metrics: OpenTelemetryMetrics = Object.assign(record, {
    meter,
    watch(name: string, source: WatchSource): OpenTelemetryMetrics {
      watched.add(name, source)
      return metrics
    },
  })
  return metrics
}
