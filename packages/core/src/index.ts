/**
 * The public entry of @sluice/core: what an application uses (limiters, stores, keys, rules,
 * metrics, errors) and every public type. What an adapter or store author needs besides is in
 * @sluice/core/adapter (./adapter.ts); the simulator in @sluice/core/simulate.
 */
export { createLimiter } from './create-limiter'
export type { Limiter, RefundOptions, WaitOptions } from './create-limiter'
export type {
  LimiterOptions,
  LimitOptions,
  ConsumeOptions,
  ThrottleMode,
  SpareProbe,
  StoreErrorMode,
  FallbackLimiter,
} from './options'
export type { Decision, PolicyDecision } from './decision'
export type { AlgorithmName, Policy, PolicyOutcome, WindowAnchor } from './policy'
export { ALGORITHMS } from './policy'
export type { Algorithm, Decide, StateVector } from './algorithms'
export type { Store, StoreRequest, StoreRefund, StoreResult, StoreBlock } from './store/types'
export { MemoryStore } from './store/memory-store'
export type { MemoryStoreOptions } from './store/memory-store'
export { localTier } from './tier/local-tier'
export type { LocalTier, LocalTierOptions, LocalTierStats } from './tier/local-tier'
export { eventLoopSpare } from './throttle'
export type { EventLoopSpareOptions } from './throttle'
export { parseDuration, formatDuration } from './duration'
export type { Duration } from './duration'
export type { Clock } from './clock'
export { monotonicClock, monotonicTurnClock, systemClock, turnClock } from './clock'
export { SluiceError, ConfigError, StoreError } from './errors'
export type { StoreErrorCode } from './errors'
export { storeHealth } from './store-call/health'
export type {
  BreakerOptions,
  BreakerState,
  StoreHealthSnapshot,
  StoreLogger,
} from './store-call/health'
export type { SluiceErrorCode } from './errors'
export { ipKey, headerKey, userKey, combineKeys, normalizeIp, UNKNOWN_IP_KEY } from './http/keys'
export type {
  HttpRequestLike,
  RequestLike,
  HeadersLike,
  KeyFunction,
  Logger,
  IpKeyOptions,
} from './http/keys'
export type {
  StandardHeadersDraft,
  ResetStyle,
  LegacyHeaderNames,
  HeaderOptions,
  HeaderList,
  ResponseTimes,
} from './http/headers'
export type {
  HttpLimitOptions,
  HttpLimiter,
  HttpVerdict,
  PassVerdict,
  AllowVerdict,
  RejectVerdict,
  FrameworkDefaults,
  RateLimitMessage,
  RequestList,
  ResponseLike,
} from './http/pipeline'
export type { BadKeyMode, KeyResult } from './http/key-result'
export type { ProxyTrust } from './http/proxy-warnings'
export type {
  Trace,
  TraceRequest,
  SimulateOptions,
  SimulatedRequest,
  SimulationResult,
  RenderOptions,
  TraceName,
  TraceOptions,
  CommandIo,
} from './simulate'
export type { ShadowDecision } from './decision'
export type { DecisionEvent, DecisionHook } from './events'
export {
  loadRules,
  parseRules,
  watchRules,
  RulesError,
  formatRuleTable,
  createRulesLimiter,
} from './rules'
export type {
  LoadRulesOptions,
  RulesWatcher,
  WatchRulesOptions,
  RulesLogger,
  RulesIssue,
  DescriptorEntry,
  Rule,
  MatchedRule,
  RuleSet,
  RulesDocument,
  DescriptorConfig,
  RateLimitConfig,
  RuleUnit,
  RulesLimiter,
  RulesLimiterOptions,
  RulesDecision,
  RulesSource,
  RulesConsumeOptions,
  RulesWaitOptions,
} from './rules'
export { prometheusMetrics } from './metrics/prometheus'
export type { PrometheusMetrics, PrometheusMetricsOptions } from './metrics/prometheus'
