/**
 * The public entry of @sluice/core: everything users and the adapters import.
 */
export { createLimiter, combineOutcomes } from './create-limiter'
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
export { resolvePolicy, resolvePolicies, ALGORITHM_CODES } from './options'
export type { Decision, PolicyDecision } from './decision'
export type { AlgorithmName, Policy, PolicyOutcome } from './policy'
export { ALGORITHMS, METER_ALGORITHMS } from './policy'
export { algorithms } from './algorithms'
export type { Algorithm, Decide, StateVector } from './algorithms'
export type { Store, StoreRequest, StoreRefund, StoreResult, StoreBlock } from './store/types'
export { MemoryStore } from './store/memory-store'
export type { MemoryStoreOptions } from './store/memory-store'
export { eventLoopSpare } from './throttle'
export type { EventLoopSpareOptions } from './throttle'
export { parseDuration, formatDuration } from './duration'
export type { Duration } from './duration'
export type { Clock } from './clock'
export { systemClock, turnClock } from './clock'
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
export {
  ipKey,
  headerKey,
  userKey,
  combineKeys,
  normalizeIp,
  boundKey,
  UNKNOWN_IP_KEY,
  MAX_KEY_BYTES,
} from './http/keys'
export type { HttpRequestLike, KeyFunction, Logger, IpKeyOptions } from './http/keys'
export {
  createHeaderWriter,
  responseTimes,
  checkStandardHeaders,
  STANDARD_HEADER_DRAFTS,
  DEFAULT_LEGACY_NAMES,
} from './http/headers'
export type {
  StandardHeadersDraft,
  ResetStyle,
  LegacyHeaderNames,
  HeaderOptions,
  HeaderList,
  ResponseTimes,
} from './http/headers'
export { createHttpLimiter, checkAlias, HTTP_OPTION_NAMES } from './http/pipeline'
export { invalidOption, withoutStack } from './errors'
export { createRefusalJson, JSON_CONTENT_TYPE } from './http/refusal-json'
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
} from './http/pipeline'
export type { BadKeyMode, KeyResult } from './http/key-result'
export { resetProxyWarnings } from './http/proxy-warnings'
export { checkAliasLimit, checkAliasMs, checkAliasDuration } from './http/alias-values'
export type { ProxyTrust } from './http/proxy-warnings'
export {
  simulate,
  renderSvg,
  SVG_COLORS,
  makeTrace,
  seededRandom,
  TRACE_NAMES,
  runSimulateCommand,
} from './simulate'
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
export { isPromise } from './promise'
