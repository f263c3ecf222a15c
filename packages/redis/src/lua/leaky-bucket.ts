/**
 * The leaky-bucket script: token-bucket's, with shaping.
 */
import { bucketLua } from './token-bucket'

/**
 * leaky-bucket: token-bucket's state with shaping (admitted requests get `delayMs`), as in
 * core's algorithms/leaky-bucket.ts. Needs METER.
 */
export const LEAKY_BUCKET = bucketLua('lb', true)
