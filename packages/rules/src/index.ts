/**
 * @sluice/rules: rules files (YAML or JSON, Lyft ratelimit's shape) loaded, validated (zod),
 * watched and reloaded off the event loop, and the limiters that take them by path: a rules
 * limiter, and the HTTP pipeline of the Node adapters. Matching compiled rules is @sluice/http's.
 */
export { loadRules, parseRules } from './load'
export type { LoadRulesOptions } from './load'
export { watchRules } from './watch'
export type { WatchRulesOptions } from './watch'
export { RulesError } from './errors'
export type { RulesIssue } from './errors'
export { formatRuleTable } from './table'
export { createRulesLimiter } from './open'
export { createHttpLimiter } from './node-host'
export type {
  DescriptorEntry,
  Rule,
  MatchedRule,
  RuleSet,
  RulesDocument,
  DescriptorConfig,
  RateLimitConfig,
  RuleUnit,
  RulesWatcher,
  RulesLogger,
  RulesLimiter,
  RulesLimiterOptions,
  RulesDecision,
  RulesSource,
  RulesConsumeOptions,
  RulesWaitOptions,
} from '@sluice/http'
// Reading a file the user named within bounds (the CLI reads simulation traces with it too).
export { readBoundedText, UnreadableFile } from './bounded-read'
