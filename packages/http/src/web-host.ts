/**
 * Owns the web build's createHttpLimiter: the same pipeline, with rules taken only as a
 * compiled RuleSet or a RulesWatcher, so that nothing of Node's is imported.
 */
import { createRulesLimiterWith } from './rules/limiter'
import { openRulesOnWeb } from './rules/web-open'
import { httpLimiterFactory } from './http-limiter'

export const createHttpLimiter = httpLimiterFactory((options) =>
  createRulesLimiterWith(options, openRulesOnWeb),
)
