/**
 * The public entry of @sluice/core: what an application uses (limiters, stores, keys, rules,
 * metrics, errors) and every public type. What an adapter or store author needs besides is in
 * @sluice/core/adapter (./adapter.ts); the simulator in @sluice/core/simulate.
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
export { ipKey, headerKey, userKey, combineKeys, normalizeIp, UNKNOWN_IP_KEY } from './http/keys'
export {
  loadRules,
  parseRules,
  watchRules,
  RulesError,
  formatRuleTable,
  createRulesLimiter,
} from './rules'
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
export type { SlotLease } from './concurrency/slots'
export type { SlotStore, SlotRequest, SlotReply } from './concurrency/slots'
