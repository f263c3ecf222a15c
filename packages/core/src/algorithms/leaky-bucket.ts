/**
 * Owns the leaky-bucket algorithm: a meter whose admitted requests may be shaped (delayMs).
 */
import { bucketAlgorithm, bucketWide } from './token-bucket'

/**
 * A queue of `burst` requests leaking at `limit` per window. Admitted requests carry `delayMs`:
 * how long to hold them so they leave at a constant rate. State: [level x windowMs, lastLeak].
 */
export const leakyBucket = bucketAlgorithm(true)

export const leakyBucketWide = bucketWide(true)
