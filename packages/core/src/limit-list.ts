/**
 * Owns a limiter's list of limits: `limit`/`window` or `limits`, each resolved as a policy
 * (options.ts), with no two of one name or one state.
 */
import { checkKnownOptions } from './declared-options'
import { invalidOption } from './errors'
import {
  LIMIT_OPTION_NAMES,
  resolvePolicy,
  type LimiterOptions,
  type LimitOptions,
} from './options'
import type { Policy } from './policy'

/** The policies of a limiter: `limits`, or the single limit given at the top level. */
export function resolvePolicies(options: LimiterOptions): Policy[] {
  if (options.limits !== undefined) {
    if (!Array.isArray(options.limits) || options.limits.length === 0) {
      invalidOption('limits', options.limits, 'a non-empty array of { limit, window }')
    }
    for (const option of ['limit', 'window', 'burst', 'precision', 'anchor'] as const) {
      if (options[option] !== undefined) {
        invalidOption(
          option,
          options[option],
          'unset when `limits` is given (set it on each limit)',
        )
      }
    }
    const policies = options.limits.map((limit, i) => {
      // A typo (`brust`) would otherwise pass, and the limit take its default.
      if (limit !== null && typeof limit === 'object')
        checkKnownOptions(limit, LIMIT_OPTION_NAMES, `limits[${i}]`)
      return resolvePolicy({ algorithm: options.algorithm, ...limit }, `limits[${i}].`)
    })
    const names = new Set<string>()
    const ids = new Map<string, number>()
    for (const [i, policy] of policies.entries()) {
      if (names.has(policy.name))
        invalidOption(`limits[${i}].name`, policy.name, 'unique among the limits')
      names.add(policy.name)
      // One state per policy id and key: a second limit of the same id would take every
      // request from that state again, admitting half its limit whatever its name.
      const first = ids.get(policy.id)
      if (first !== undefined) {
        invalidOption(
          `limits[${i}]`,
          options.limits[i],
          `a limit unlike limits[${first}] (the same algorithm, limit, window and burst would share its count and be charged twice)`,
        )
      }
      ids.set(policy.id, i)
    }
    return policies
  }
  if (options.limit === undefined)
    invalidOption('limit', undefined, 'a positive integer (or give `limits`)')
  if (options.window === undefined)
    invalidOption('window', undefined, "a duration such as '1m' (or give `limits`)")
  return [resolvePolicy(options as LimitOptions)]
}
