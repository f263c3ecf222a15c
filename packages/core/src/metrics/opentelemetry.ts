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
   * Where a failing instrument, tracer or watched source is reported (once each; decisions and
   * the other metrics are never affected).
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

/**
 * @opentelemetry/api is an optional peer: loaded only when a default meter or tracer is needed.
 * One loader per need, so a missing package is blamed on the option that asked for it.
 */
const OTEL_API = '@opentelemetry/api'
const loadForMeter = optionalPeer<OtelApi>(OTEL_API, 'openTelemetryMetrics() without a `meter`')
const loadForTracer = optionalPeer<OtelApi>(OTEL_API, 'openTelemetryMetrics({ tracer: true })')

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
  if (tracer === true) return loadForTracer().trace.getTracer('@sluice/core')
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

/** What failed, as a warning names it. */
const instrumentNamed = (name: string): string => `the OpenTelemetry instrument \`${name}\``
const sourceNamed = (name: string): string => `reading the watched source "${name}"`
const TRACER = 'the OpenTelemetry tracer'

/**
 * Reports each failing part (instrument, tracer, watched source) once: a part that keeps failing
 * does not flood the log, and a second broken part is not hidden behind the first.
 */
function reporter(warn: (message: string) => void): (what: string, error: unknown) => void {
  const reported = new Set<string>()
  return function failed(what: string, error: unknown): void {
    if (reported.has(what)) return
    reported.add(what)
    warn(
      `[sluice] ${what} threw (reported once; decisions and the other metrics are unaffected): ${String(error)}`,
    )
  }
}

/**
 * An OpenTelemetry recorder for `createLimiter({ onDecision: openTelemetryMetrics({ meter }) })`:
 * the counters, histogram and gauges `prometheusMetrics` exports, under the same names and
 * labels. A meter that throws never changes a decision, and each instrument and watched source
 * fails alone: the others are still recorded, and each failing one is logged once.
 */
export function openTelemetryMetrics(
  options: OpenTelemetryMetricsOptions = {},
): OpenTelemetryMetrics {
  const meter = checkMeter(options.meter ?? loadForMeter().metrics.getMeter('@sluice/core'))
  const prefix = checkPrefix(options.prefix ?? 'sluice_')
  const ratio = checkNearLimitRatio(options.nearLimitRatio)
  const tracer = checkTracer(options.tracer)
  const warn = options.logger === undefined ? sluiceWarning : (m: string) => options.logger!.warn(m)
  const buckets = [...(options.buckets ?? DEFAULT_LATENCY_BUCKETS)]
  const watched = new WatchList()
  const failed = reporter(warn)
  const failedSource = (name: string, error: unknown): void => failed(sourceNamed(name), error)

  /** Creates one instrument; a meter that refuses it leaves out that one alone. */
  function create<T>(name: string, make: (name: string) => T): T | undefined {
    try {
      return make(prefix + name)
    } catch (error) {
      failed(instrumentNamed(prefix + name), error)
      return undefined
    }
  }

  const counters: Partial<Record<DecisionCounter, OtelCounter>> = {}
  for (const [counter, [name, description]] of Object.entries(DECISION_COUNTERS)) {
    counters[counter as DecisionCounter] = create(name, (n) =>
      meter.createCounter(n, { description }),
    )
  }
  const latency: OtelHistogram | undefined = create(STORE_LATENCY[0], (n) =>
    meter.createHistogram(n, {
      description: STORE_LATENCY[1],
      unit: 's',
      advice: { explicitBucketBoundaries: buckets },
    }),
  )
  for (const metric of Object.keys(WATCHED) as WatchedMetric[]) observeWatched(metric)

  /**
   * Registers the observable of one watched metric. Its callback reads every source: one that
   * throws is skipped and reported, so the other sources' values are still observed.
   */
  function observeWatched(metric: WatchedMetric): void {
    const [name, description] = WATCHED[metric]
    const kind = WATCHED_TOTALS.has(metric) ? 'createObservableCounter' : 'createObservableGauge'
    create(name, (full) =>
      meter[kind](full, { description }).addCallback((result) => {
        try {
          watched.read((reading, source) => {
            if (reading.metric === metric)
              result.observe(reading.value, { name: source, ...reading.labels })
          }, failedSource)
        } catch (error) {
          failed(instrumentNamed(full), error)
        }
      }),
    )
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

  /** Adds 1 to one counter; a counter that throws is reported and the others still count. */
  function add(counter: DecisionCounter, attributes: OtelAttributes): void {
    try {
      counters[counter]?.add(1, attributes)
    } catch (error) {
      failed(instrumentNamed(prefix + DECISION_COUNTERS[counter][0]), error)
    }
  }

  // One try per instrument (and one for the tracer): each fails alone, the others still record.
  const record = function recordDecision(event: DecisionEvent): void {
    const attributes = labelsOf(event.policy)
    try {
      latency?.record(event.storeLatencyMs / 1000, attributes)
    } catch (error) {
      failed(instrumentNamed(prefix + STORE_LATENCY[0]), error)
    }
    for (const counter of countersOf(event, ratio)) add(counter, attributes)
    if (tracer === undefined) return
    try {
      span(event)
    } catch (error) {
      failed(TRACER, error)
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
