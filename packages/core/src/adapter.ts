/**
 * @sluice/core/adapter: what an adapter or a store author uses besides the main entry: the
 * HTTP pipeline, headers, peer option names, policies and the algorithms' transitions, and the
 * helpers the packages share. Its types are exported by the main entry.
 */
export { combineOutcomes } from './create-limiter'
export {
  resolvePolicy,
  resolvePolicies,
  ALGORITHM_CODES,
  policyCode,
  checkKnownOptions,
} from './options'
export { isWide, METER_ALGORITHMS, MAX_SAFE_PRODUCT, MAX_UNITS } from './policy'
export { algorithms, algorithmOf } from './algorithms'
export {
  REGISTRY,
  ROWS,
  namesIn,
  listNames,
  type AlgorithmRow,
  type AlgorithmFamily,
  type StateShape,
  type ReplyShape,
} from './algorithms/registry'
export type { LuaFragments, LuaFrame } from './algorithms/lua'
export { boundKey, MAX_KEY_BYTES } from './http/keys'
export {
  createHeaderWriter,
  responseTimes,
  checkStandardHeaders,
  STANDARD_HEADER_DRAFTS,
  DEFAULT_LEGACY_NAMES,
} from './http/headers'
export { refusePeerNames, type PeerNames, HTTP_OPTION_NAMES } from './http/pipeline'
export { sfString, isSfStringText, checkSfStringText } from './http/structured'
export { createHttpLimiter } from './http/node'
export { invalidOption, withoutStack } from './errors'
export { createRefusalJson, JSON_CONTENT_TYPE } from './http/refusal-json'
export { resetProxyWarnings } from './http/proxy-warnings'
export { checkAliasLimit, checkAliasMs } from './http/alias-values'
export { IncrementStoreAdapter } from './compat/increment-store'
export type { IncrementCount, IncrementStore } from './compat/increment-store'
export { isPromise } from './promise'
export { SerialQueues } from './store-call/serial'
export { nameStore, storeName } from './store-call/store-name'
export { BlockCache } from './store/block-cache'
export { setMonotonicSource, type MonotonicSource } from './clock'
