/**
 * Owns what the pipeline needs to know of a watched rules file (watchRules, in @sluice/rules):
 * its current set, and where its reload news goes.
 */
import type { RuleSet } from './compile'

/** Where reload news goes; `console` fits. */
export interface RulesLogger {
  /** An invalid or unreadable new version (the previous rules stay in force). */
  warn(message: string): void
  /** A new version took effect. */
  info?(message: string): void
}

/** A rules file kept loaded. Read `watcher.rules` once per request and use that set throughout. */
export interface RulesWatcher {
  /** The rules in force: the last valid version. Each version is immutable; a reload swaps the reference. */
  readonly rules: RuleSet
  /** Reads the file now (e.g. on SIGHUP); resolves true when a new valid version took effect. */
  reload(): Promise<boolean>
  /** Stops watching. The last rules stay readable. */
  close(): void
}
