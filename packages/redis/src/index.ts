/**
 * The public entry of @sluice/redis.
 */
import { nameStore } from '@sluice/core/web'
import { RedisStore } from './redis-store'

// Log lines and errors name the store, even where a bundler renamed the class.
nameStore(RedisStore, 'RedisStore')

export { RedisStore }
export type { RedisStoreOptions, BlockCacheOptions } from './redis-store'
export type {
  IoredisLikeClient,
  NodeRedisLikeClient,
  RedisClientLike,
  UpstashLikeClient,
} from './client/types'
export { SCRIPTS } from './lua'
/** Short codes the scripts know the algorithms by (core's, the same as in policy ids). */
export { ALGORITHM_CODES } from '@sluice/core/web'
export type { LuaScript } from './lua'
export { escapeKey, policyKeyId } from './keys'
