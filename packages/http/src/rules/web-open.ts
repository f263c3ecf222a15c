/**
 * Owns opening rules where only web APIs exist: a RuleSet or a RulesWatcher is taken as is (see
 * resolveRules); a file path or a document is refused at creation, with the way to get a set.
 */
import { invalidOption } from '@sluice/core/web'
import type { RulesOpener } from './limiter'

export const openRulesOnWeb: RulesOpener = (source, _logger, option) =>
  invalidOption(
    option,
    typeof source === 'string' ? source : 'a rules document',
    'a RuleSet or a RulesWatcher here (this build reads no files, and checks no documents: their schema loads through node:module): on Node, pass loadRules(pathOrDocument) or watchRules(path) from @sluice/rules',
  )
