/**
 * Owns the table of algorithms by name, as policies and stores look them up.
 */
import type { AlgorithmName, Policy } from '../policy'
import type { Algorithm } from './types'
import { firstRequestWindow } from './first-request-window'
import { fixedWindow } from './fixed-window'
import { gcra } from './gcra'
import { leakyBucket } from './leaky-bucket'
import { slidingLog } from './sliding-log'
import { slidingWindow } from './sliding-window'
import { tokenBucket } from './token-bucket'

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

/** The transitions `policy` runs: its algorithm's, or fixed-window's per-key variant's. */
export function algorithmOf(policy: Pick<Policy, 'algorithm' | 'anchor'>): Algorithm {
  return policy.anchor === 'first-request' ? firstRequestWindow : algorithms[policy.algorithm]
}
