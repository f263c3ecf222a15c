/**
 * The public entry of @sluice/redis.
 */
export { RedisStore } from './redis-store'
export type { RedisStoreOptions, BlockCacheOptions } from './redis-store'
export { SCRIPTS, ALGORITHM_CODES } from './lua'
export type { LuaScript } from './lua'
export { escapeKey } from './keys'
