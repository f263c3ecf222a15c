/**
 * Owns RulesError: every problem of a rules file, each with its path and line.
 */
import { ConfigError } from '@sluice/core'

/** One problem found in a rules file. */
export interface RulesIssue {
  /** Where in the document, e.g. `descriptors[2].rate_limit.unit` (empty for the whole file). */
  readonly path: string
  /** 1-based line in the file, when the rules came from text. */
  readonly line: number | undefined
  /** What is wrong, naming the path, e.g. "`descriptors[2].rate_limit.unit` must be one of ...". */
  readonly message: string
}

/**
 * A rules file that does not load: every problem found, each naming the file, the path inside it
 * and what is wrong (one per line of `message`). A ConfigError, so `code` is 'ERR_SLUICE_CONFIG'.
 */
export class RulesError extends ConfigError {
  readonly source: string
  readonly issues: readonly RulesIssue[]

  constructor(source: string, issues: readonly RulesIssue[], options?: { cause?: unknown }) {
    super(
      issues
        .map(
          (issue) =>
            `${source}${issue.line === undefined ? '' : `:${issue.line}`}: ${issue.message}`,
        )
        .join('\n'),
      options,
    )
    this.name = 'RulesError'
    this.source = source
    this.issues = issues
  }
}
