/**
 * Every public type of @sluice/core that any runtime can use: the main entry and
 * @sluice/core/web export them all. Nothing here may reach a Node built-in or an optional peer
 * (prom-client): a Workers or Deno project type-checks the web entry without @types/node.
 */
export type { Limiter, RefundOptions, WaitOptions } from './limiter/types'
export type {
  LimiterOptions,
  LimitOptions,
  ConsumeOptions,
  WaitUntil,
  ThrottleMode,
  SpareProbe,
  StoreErrorMode,
  FallbackLimiter,
} from './options'
export type { Decision, PolicyDecision } from './decision'
export type { AlgorithmName, Policy, PolicyOutcome, WindowAnchor } from './policy'
export type { Algorithm, Decide, PolicyNumbers, StateVector } from './algorithms'
export type { Store, StoreRequest, StoreRefund, StoreResult, StoreBlock } from './store/types'
export type { MemoryStoreOptions } from './store/memory-store'
export type { LocalTier, LocalTierOptions, LocalTierStats } from './tier/local-tier'
export type { EventLoopSpareOptions } from './throttle'
export type { Duration } from './duration'
export type { Clock } from './clock'
export type { StoreErrorCode } from './errors'
export type {
  BreakerOptions,
  BreakerState,
  StoreHealthSnapshot,
  StoreLogger,
} from './store-call/health'
export type { SluiceErrorCode } from './errors'
export type { ShadowDecision } from './decision'
export type { DecisionEvent, DecisionHook } from './events'
