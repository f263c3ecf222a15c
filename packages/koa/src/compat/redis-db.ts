/**
 * Owns koa-ratelimit's `db` as a Redis client: the client made into @sluice/redis's RedisStore,
 * which is loaded only here, when a Redis `db` is given (an optional peer dependency, so apps
 * on a Map need not install it).
 */
import { createRequire } from 'node:module'
import type { Store } from '@sluice/core'
import { invalidOption } from '@sluice/core/adapter'
import type * as SluiceRedis from '@sluice/redis'

/** An ioredis client (`Redis` or `Cluster`), as koa-ratelimit takes it in `db`. */
export interface RedisDb {
  defineCommand(...args: never[]): unknown
}

export function isRedisDb(db: unknown): db is RedisDb {
  return (
    typeof db === 'object' && db !== null && typeof (db as RedisDb).defineCommand === 'function'
  )
}

/**
 * A RedisStore on the client, keys `<namespace>:{<id>}:<policy>`. Without its block cache: as
 * with koa-ratelimit, deleting a client's keys in Redis lets it in again at once.
 */
export function redisStoreOn(db: RedisDb, namespace: string): Store {
  let redis: typeof SluiceRedis
  try {
    // Resolved from this package, in its CommonJS build as in its ESM one (tsup shims __filename).
    redis = createRequire(__filename)('@sluice/redis') as typeof SluiceRedis
  } catch (error) {
    if ((error as { code?: unknown }).code !== 'MODULE_NOT_FOUND') throw error
    invalidOption(
      'db',
      db,
      'a Map, or a Redis client with @sluice/redis installed (npm i @sluice/redis)',
    )
  }
  return new redis.RedisStore({
    client: db as unknown as SluiceRedis.RedisStoreOptions['client'],
    prefix: namespace,
    blockCache: false,
  })
}
