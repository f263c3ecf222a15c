/**
 * The public entry of @sluice/core, the limiter kernel: what an application uses (limiters,
 * stores, metrics, errors) and every public type. What a store author needs besides is in
 * @sluice/core/adapter (./adapter.ts). Keys, headers and the HTTP pipeline are @sluice/http's,
 * rules files @sluice/rules', the simulator and the `sluice` command @sluice/cli's.
 */
export { createLimiter } from './create-limiter'
// Every public type but metrics' (prom-client's), shared with @sluice/core/web.
export type * from './public-types'
export { ALGORITHMS } from './policy'
export { MemoryStore } from './store/memory-store'
export { localTier } from './tier/local-tier'
export { eventLoopSpare } from './throttle'
export { parseDuration, formatDuration } from './duration'
export { monotonicClock, monotonicTurnClock, systemClock, turnClock } from './clock'
export { SluiceError, ConfigError, StoreError } from './errors'
export { storeHealth } from './store-call/health'
export { prometheusMetrics } from './metrics/prometheus'
export type { PrometheusMetrics, PrometheusMetricsOptions } from './metrics/prometheus'
export { openTelemetryMetrics } from './metrics/opentelemetry'
export type { OpenTelemetryMetrics, OpenTelemetryMetricsOptions } from './metrics/opentelemetry'
export type {
  OtelMeter,
  OtelTracer,
  OtelAttributes,
  OtelCounter,
  OtelHistogram,
  OtelObservable,
  OtelObservableResult,
  OtelInstrumentOptions,
  OtelSpan,
} from './metrics/otel-types'
export type { HttpGauges, WatchSource } from './metrics/watched'
export type { TopRefusedOptions, RefusedKey, KeyReveal } from './metrics/top-refused'
export type { ConcurrencyLimit, ConcurrencyPolicy } from './concurrency/policy'
export { concurrencySlotKey } from './concurrency/slots'
export type { SlotLease } from './concurrency/slots'
export type { SlotStore, SlotRequest, SlotReply } from './concurrency/slots'
