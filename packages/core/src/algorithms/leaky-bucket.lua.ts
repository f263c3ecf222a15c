/**
 * leaky-bucket's Lua: token-bucket's state with shaping (admitted requests get `delayMs`), as in
 * leaky-bucket.ts.
 */
import { bucketLua } from './token-bucket.lua'

export const leakyBucketLua = bucketLua('lb', true)
