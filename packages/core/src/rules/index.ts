/**
 * The rules part of the public API: loading, watching, matching and limiting by rules files.
 */
export { loadRules, parseRules } from './load'
export type { LoadRulesOptions } from './load'
export { watchRules } from './watch'
export type { RulesWatcher, WatchRulesOptions, RulesLogger } from './watch'
export { RulesError } from './errors'
export type { RulesIssue } from './errors'
export { formatRuleTable } from './table'
export type { DescriptorEntry, Rule, MatchedRule, RuleSet } from './compile'
export type { RulesDocument, DescriptorConfig, RateLimitConfig, RuleUnit } from './schema'
export { createRulesLimiter } from './open'
export type {
  RulesLimiter,
  RulesLimiterOptions,
  RulesDecision,
  RulesSource,
  RulesConsumeOptions,
  RulesWaitOptions,
} from './limiter'
