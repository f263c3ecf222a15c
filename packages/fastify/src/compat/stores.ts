/**
 * Owns where a compat limit counts: a @fastify/rate-limit store class (used as is, through
 * core's increment-store adapter), Redis (`redis`: Sluice's RedisStore on the given client) or
 * Sluice's MemoryStore. Each route with options of its own counts apart, as the peer's
 * `store.child()` does, except that routes with one `groupId` count together.
 */
import { MemoryStore, type Store } from '@sluice/core'
import type { Placement } from './limit'
import { FastifyPeerStore } from './peer-store'
import type { PeerStore, RateLimitParams, RateLimitPluginOptions } from './types'

const DEFAULT_CACHE = 5000
const DEFAULT_NAMESPACE = 'fastify-rate-limit-'

/** Places the plugin's limit and each route's or decorator's limit. */
export type Placer = (params: RateLimitParams, child: boolean) => Placement

async function redisStore(client: object, nameSpace: string): Promise<Store> {
  const { RedisStore } = await import('@sluice/redis')
  return new RedisStore({ client: client as never, prefix: nameSpace })
}

export async function placer(
  options: RateLimitPluginOptions,
  globalParams: RateLimitParams,
): Promise<Placer> {
  if (options.store !== undefined) {
    const root: PeerStore = new options.store(globalParams)
    return (params, child) => ({
      store: new FastifyPeerStore(child ? root.child(params) : root),
      prefix: '',
    })
  }
  const maxKeys =
    typeof options.cache === 'number' && options.cache > 0 ? options.cache : DEFAULT_CACHE
  const store =
    options.redis !== undefined
      ? await redisStore(options.redis, options.nameSpace ?? DEFAULT_NAMESPACE)
      : new MemoryStore({ maxKeys })
  let unnamed = 0
  return (params, child) => {
    if (!child) return { store, prefix: '' }
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
    return { store, prefix }
  }
}
