/**
 * Owns `formatRuleTable`: the rules of a set as the text table `sluice check-rules` prints.
 */
import { formatDuration } from '@sluice/core'
import { METER_ALGORITHMS } from '@sluice/core/adapter'
import type { RuleSet } from '@sluice/http'

const UNIT_NAMES: Readonly<Record<string, string>> = {
  '1s': 'second',
  '1m': 'minute',
  '1h': 'hour',
  '1d': 'day',
}

/**
 * The effective rule table, as `sluice check-rules` prints it: one row per rule with what it
 * matches, its limit, algorithm, mode and the state key it counts under (`<key>` stands for the
 * request's value of a bare-key descriptor, counted per value).
 */
export function formatRuleTable(rules: RuleSet): string {
  const header = ['RULE', 'MATCHES', 'LIMIT', 'ALGORITHM', 'BURST', 'MODE', 'STATE KEY']
  const rows = rules.rules.map((rule) => {
    const matches = rule.match
      .map(({ key, value }) => `${key}=${value === undefined ? '*' : value}`)
      .join(' > ')
    const stateKey = [
      rules.domain,
      ...rule.match.map(({ key, value }) => `${key}=${value ?? `<${key}>`}`),
    ].join('|')
    const policy = rule.policy
    if (policy === undefined) return [rule.name, matches, 'unlimited', '-', '-', 'exempt', stateKey]
    const unit = formatDuration(policy.windowMs)
    return [
      rule.name,
      matches,
      `${policy.limit}/${UNIT_NAMES[unit] ?? unit}`,
      policy.algorithm,
      METER_ALGORITHMS.has(policy.algorithm) ? String(policy.burst) : '-',
      rule.shadow ? 'shadow' : 'enforce',
      stateKey,
    ]
  })
  // A loop, not Math.max(...rows): spread arguments overflow the stack past about 100,000 rows.
  const widths = header.map((title, column) =>
    rows.reduce((widest, row) => Math.max(widest, row[column].length), title.length),
  )
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column])))
      .join('  ')
  const count = `${rules.rules.length} rule${rules.rules.length === 1 ? '' : 's'}`
  return [
    `domain ${rules.domain} (${rules.source}): ${count}`,
    line(header),
    ...rows.map(line),
  ].join('\n')
}
