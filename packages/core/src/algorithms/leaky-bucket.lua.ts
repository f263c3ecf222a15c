/**
 * leaky-bucket's Lua: token-bucket's state with shaping (admitted requests get `delayMs`), as in
 * leaky-bucket.ts.
 */
import { bucketLua } from './token-bucket.lua'
import { bucketWideLua } from './token-bucket.wide.lua'

export const leakyBucketLua = bucketLua('lb', true)

/** Its wide form (token-bucket.wide.lua.ts with shaping). */
export const leakyBucketWideLua = bucketWideLua('lbw', true)
