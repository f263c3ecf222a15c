/**
 * Owns the table of algorithms by name, as policies and stores look them up.
 */
import { isWide, type AlgorithmName, type Policy } from '../policy'
import type { Algorithm } from './types'
import { firstRequestWindow } from './first-request-window'
import { fixedWindow } from './fixed-window'
import { gcra } from './gcra'
import { leakyBucket } from './leaky-bucket'
import { slidingLog } from './sliding-log'
import { slidingWindow } from './sliding-window'
import { tokenBucket } from './token-bucket'
import { gcraWide, leakyBucketWide, tokenBucketWide } from './wide-meter'

export type { Algorithm, Decide, StateVector } from './types'
export { decideThenApply, newOutcome } from './types'

export const algorithms: Readonly<Record<AlgorithmName, Algorithm>> = {
  'fixed-window': fixedWindow,
  'sliding-window': slidingWindow,
  'sliding-log': slidingLog,
  'token-bucket': tokenBucket,
  'leaky-bucket': leakyBucket,
  gcra,
}

/** The meters' transitions for wide policies (see isWide); the counters are exact at any size. */
const WIDE: Partial<Record<AlgorithmName, Algorithm>> = {
  'token-bucket': tokenBucketWide,
  'leaky-bucket': leakyBucketWide,
  gcra: gcraWide,
}

/**
 * The transitions `policy` runs: its algorithm's; fixed-window's per-key variant's; a meter's
 * wide one when the policy is wide.
 */
export function algorithmOf(
  policy: Pick<Policy, 'algorithm' | 'anchor' | 'limit' | 'burst' | 'windowMs'>,
): Algorithm {
  if (policy.anchor === 'first-request') return firstRequestWindow
  return (isWide(policy) && WIDE[policy.algorithm]) || algorithms[policy.algorithm]
}
