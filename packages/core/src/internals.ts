/**
 * What the packages built on the kernel use besides its public names: @sluice/http (the
 * pipeline and the compiled-rules matcher), @sluice/rules, @sluice/cli and the stores. Not for
 * applications (the main entry is theirs). Exported by @sluice/core/web, whose build imports no
 * Node built-in (so @sluice/http runs where only web APIs exist), and by @sluice/core/adapter.
 */
export { buildLimiter } from './create-limiter'
export type { DirectConsume } from './limiter/types'
export { combineOutcomes, degradedDecision } from './limiter/decisions'
export {
  abortReason,
  badArgument,
  checkCost,
  checkMs,
  checkWaitUntil,
  describeMode,
} from './limiter/checks'
export { holdFor } from './limiter/wait'
export { resolveStoreSettings } from './limiter/store-settings'
export { boundedStoreCall, toStoreError } from './store-call/bounded'
export { OldestFirst } from './oldest-first'
export {
  resolvePolicy,
  ALGORITHM_CODES,
  LIMIT_OPTION_NAMES,
  policyCode,
  checkKnownOptions,
  checkPositiveInteger,
} from './options'
export { resolvePolicies } from './limit-list'
export {
  checkBoolean,
  checkFiniteNumber,
  checkFunction,
  checkOneOf,
  checkWholeNumber,
} from './option-checks'
export { isWide, METER_ALGORITHMS, MAX_SAFE_PRODUCT, MAX_UNITS } from './policy'
export { algorithms, algorithmOf } from './algorithms'
export { newOutcome } from './decision'
export {
  REGISTRY,
  ROWS,
  namesIn,
  namesWhere,
  namesTaking,
  DEFAULT_ALGORITHM,
  listNames,
  type AlgorithmRow,
  type AlgorithmFamily,
  type StateShape,
  type ReplyShape,
} from './algorithms/registry'
export type { FlatSteps, LuaFragments, LuaFrame, WideLuaFragments } from './algorithms/lua'
export { consumeAnd, refundBranch } from './algorithms/lua'
export { LIMBS_LUA } from './algorithms/limbs.lua'
export { invalidOption, describeValue, withoutStack } from './errors'
export { isPromise } from './promise'
export { declareOptions } from './declared-options'
export type { DeclaredOptions, OptionSpec, OptionTable } from './declared-options'
export { LIMIT_OPTIONS } from './options'
export { LIMITER_OPTIONS } from './limiter/settings'
export { prefixedKey } from './store/key-parts'
export { gateOf } from './concurrency/limiter'
export { watchHttp } from './metrics/watched'
export { boundKey, MAX_KEY_BYTES } from './bound-key'
export type { DecisionReporter } from './events'
export type { PolicyDecision } from './decision'
export type { HttpGauges } from './metrics/watched'
export type { TopRefusedOptions } from './metrics/top-refused'
export type { ConcurrencyLimit } from './concurrency/policy'
export type { SlotLease } from './concurrency/slots'
export { onCloudflareWorkers } from './runtime'
