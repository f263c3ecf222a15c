/**
 * Owns opening rules on Node: a file path is loaded now and watched (hot reload), a document is
 * validated and compiled; and createRulesLimiter with that opener.
 */
import { loadRules } from './load'
import {
  createRulesLimiterWith,
  type RulesLimiter,
  type RulesLimiterOptions,
  type RulesOpener,
} from '@sluice/http'
import { watchRules } from './watch'

export const openRules: RulesOpener = (source, logger) => {
  if (typeof source === 'string') {
    const watcher = watchRules(source, { logger: logger ?? console })
    return { current: () => watcher.rules, close: () => watcher.close() }
  }
  const set = loadRules(source)
  return { current: () => set, close: () => {} }
}

/**
 * A limiter over a rule set: each request's matched rules are enforced together in ONE store
 * call, all-or-nothing (see createRulesLimiterWith). `rules` may be a file path, a rules
 * document, a RuleSet or a RulesWatcher.
 */
export function createRulesLimiter(options: RulesLimiterOptions): RulesLimiter {
  return createRulesLimiterWith(options, openRules)
}
