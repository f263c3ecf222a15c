export { createLimiter, combineOutcomes } from './create-limiter'
export type { Limiter, RefundOptions } from './create-limiter'
export type {
  LimiterOptions,
  LimitOptions,
  ConsumeOptions,
  ThrottleMode,
  SpareProbe,
  StoreErrorMode,
  FallbackLimiter,
} from './options'
export { resolvePolicy, resolvePolicies } from './options'
export type { Decision, PolicyDecision } from './decision'
export type { AlgorithmName, Policy, PolicyOutcome } from './policy'
export { ALGORITHMS, METER_ALGORITHMS } from './policy'
export { algorithms } from './algorithms'
export type { Algorithm, StateVector } from './algorithms'
export type { Store, StoreRequest, StoreRefund, StoreResult } from './store/types'
export { MemoryStore } from './store/memory-store'
export type { MemoryStoreOptions } from './store/memory-store'
export { eventLoopSpare } from './throttle'
export type { EventLoopSpareOptions } from './throttle'
export { parseDuration, formatDuration } from './duration'
export type { Duration } from './duration'
export type { Clock } from './clock'
export { SluiceError, ConfigError, StoreError } from './errors'
export type { SluiceErrorCode } from './errors'
