/**
 * Owns where a compat limit counts: a @fastify/rate-limit store class (used as is, through the
 * Store seam), Redis (`redis`: Sluice's RedisStore on the given client) or Sluice's MemoryStore.
 * Each route with options of its own counts apart, as the peer's `store.child()` does, except
 * that routes with one `groupId` count together.
 */
import { MemoryStore, type Store } from '@sluice/core'
import { type Logger } from '@sluice/http'
import { createCounter, type Counter } from './counter'
import { FastifyPeerStore } from './peer-store'
import type { PeerStore, RateLimitParams, RateLimitPluginOptions } from './types'

const DEFAULT_CACHE = 5000
const DEFAULT_NAMESPACE = 'fastify-rate-limit-'

/** Makes the counter of the plugin's limit and of each route's or decorator's limit. */
export type CounterSource = (params: RateLimitParams, child: boolean) => Counter

async function redisStore(client: object, nameSpace: string): Promise<Store> {
  const { RedisStore } = await import('@sluice/redis')
  return new RedisStore({ client: client as never, prefix: nameSpace })
}

export async function counterSource(
  options: RateLimitPluginOptions,
  globalParams: RateLimitParams,
  logger: Logger,
): Promise<CounterSource> {
  const maxKeys =
    typeof options.cache === 'number' && options.cache > 0 ? options.cache : DEFAULT_CACHE
  const counterOn = (store: Store, prefix: string, params: RateLimitParams) =>
    createCounter({
      store,
      prefix,
      maxKeys,
      logger,
      continueExceeding: params.continueExceeding === true,
      exponentialBackoff: params.exponentialBackoff === true,
    })
  if (options.store !== undefined) {
    const root: PeerStore = new options.store(globalParams)
    return (params, child) =>
      counterOn(new FastifyPeerStore(child ? root.child(params) : root), '', params)
  }
  const store =
    options.redis !== undefined
      ? await redisStore(options.redis, options.nameSpace ?? DEFAULT_NAMESPACE)
      : new MemoryStore({ maxKeys })
  let unnamed = 0
  return (params, child) => {
    if (!child) return counterOn(store, '', params)
    const { method, url } = params.routeInfo
    // Routes of one group count together, as @fastify/rate-limit documents it (its own stores
    // count each route apart); any other route under its method and URL (stable across
    // processes sharing Redis); a decorator's limit apart.
    const prefix =
      params.groupId !== undefined
        ? `group-${params.groupId}-`
        : url !== undefined
          ? `${String(method)}${url}-`
          : `limit${++unnamed}-`
    return counterOn(store, prefix, params)
  }
}
