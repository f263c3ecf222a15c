/**
 * @sluice/http: the HTTP pipeline every adapter builds on (options, keys, headers, trusted
 * proxies, refusals, concurrency slots) and the compiled-rules matcher it decides rules with.
 * Nothing here imports a Node built-in, yaml or zod: it runs where only web APIs exist, and
 * type-checks without @types/node. Reading rules files is @sluice/rules'.
 */
export {
  ipKey,
  ipKeyOf,
  headerKey,
  readHeader,
  userKey,
  combineKeys,
  normalizeIp,
  boundKey,
  UNKNOWN_IP_KEY,
  MAX_KEY_BYTES,
} from './keys'
export type {
  HttpRequestLike,
  RequestLike,
  HeadersLike,
  NodeHeaders,
  KeyFunction,
  Logger,
  IpKeyOptions,
} from './keys'
export { createHttpLimiter } from './web-host'
export { refusePeerNames, type PeerNames, HTTP_OPTION_NAMES } from './pipeline'
export { httpLimiterFactory } from './http-limiter'
export { HTTP_OPTIONS } from './options'
export type {
  HttpLimitOptions,
  HttpLimiter,
  HttpVerdict,
  PassVerdict,
  AllowVerdict,
  RejectVerdict,
  HttpCheck,
  FrameworkDefaults,
  RateLimitMessage,
  RequestList,
  ResponseLike,
} from './pipeline'
export {
  createHeaderWriter,
  responseTimes,
  checkStandardHeaders,
  STANDARD_HEADER_DRAFTS,
  DEFAULT_LEGACY_NAMES,
} from './headers'
export type {
  StandardHeadersDraft,
  ResetStyle,
  LegacyHeaderNames,
  HeaderOptions,
  HeaderList,
  ResponseTimes,
} from './headers'
export type { BadKeyMode, KeyResult } from './key-result'
export { sfString, isSfStringText, checkSfStringText, checkHeaderName } from './structured'
export { createRefusalJson, JSON_CONTENT_TYPE } from './refusal-json'
export { compileTrustProxy, forwardedEntries } from './trust'
export type { TrustProxy, CompiledTrust } from './trust'
export { resetProxyWarnings } from './proxy-warnings'
export type { ProxyTrust, ProxyWarningKind } from './proxy-warnings'
export { checkAliasLimit, checkAliasMs } from './alias-values'
export { IncrementStoreAdapter } from './increment-store'
export type { IncrementCount, IncrementStore } from './increment-store'
// The compiled-rules matcher: what the pipeline decides rules with, and what @sluice/rules
// compiles files into.
export { createRulesLimiterWith } from './rules/limiter'
export type {
  RulesSource,
  RulesLimiter,
  RulesLimiterOptions,
  RulesDecision,
  RulesConsumeOptions,
  RulesWaitOptions,
  RulesOpener,
  OpenRules,
} from './rules/limiter'
export { compileRules, createRuleSetBuilder } from './rules/compile'
export type { DescriptorEntry, Rule, MatchedRule, RuleSet, RuleSetBuilder } from './rules/compile'
export type { RulesDocument, DescriptorConfig, RateLimitConfig } from './rules/document'
export type { RulesWatcher, RulesLogger } from './rules/watcher'
export { flattenDescriptors, type FlatDescriptor } from './rules/flatten'
export { pathLabel, shownKey, type Issue } from './rules/issue'
export { UNIT_MS, type RuleUnit } from './rules/units'
