/**
 * Owns looking the algorithms up by name and by policy, from the registry (registry.ts).
 */
import type { WindowAnchor } from '../policy'
import { isWide } from './exact'
import { ALGORITHM_NAMES, ROWS, type AlgorithmName } from './registry'
import type { Algorithm } from './types'

export type { Algorithm, Decide, PolicyNumbers, StateVector } from './types'
export { decideThenApply } from './types'
export * from './registry'

/** Each algorithm's (narrow) transitions, by name. */
export const algorithms: Readonly<Record<AlgorithmName, Algorithm>> = Object.fromEntries(
  ALGORITHM_NAMES.map((name) => [name, ROWS[name].narrow]),
) as Record<AlgorithmName, Algorithm>

/**
 * The transitions `policy` runs: its algorithm's; fixed-window's per-key variant's; a meter's
 * wide one when the policy is wide.
 */
export function algorithmOf(policy: {
  readonly algorithm: AlgorithmName
  readonly anchor: WindowAnchor
  readonly limit: number
  readonly burst: number
  readonly windowMs: number
}): Algorithm {
  const row = ROWS[policy.algorithm]
  if (policy.anchor === 'first-request' && row.firstRequest !== undefined) {
    return row.firstRequest.narrow
  }
  return row.wide !== undefined && isWide(policy) ? row.wide : row.narrow
}
