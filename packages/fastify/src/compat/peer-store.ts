/**
 * Owns mapping a @fastify/rate-limit store (its `incr` and `read` with callbacks) onto core's
 * increment-store adapter, so the core limiter decides with it. The peer store counts and
 * times each key's window itself (its `incr` is atomic on its side), so consume is its `incr`
 * and peek its `read`. Its interface has no way to give a hit back, forget a key or block one:
 * the adapter refuses those with an ERR_SLUICE_UNSUPPORTED error rather than skip them.
 */
import type { Policy } from '@sluice/core'
import { IncrementStoreAdapter, type IncrementCount, type IncrementStore } from '@sluice/http'
import type { PeerStore, PeerStoreResult } from './types'

export const NO_READ_MESSAGE =
  'The configured rate-limit store does not implement a `read` method, which is required to use `{ increment: false }`'

function call(
  method: 'incr' | 'read',
  store: PeerStore,
  key: string,
  policy: Policy,
): Promise<PeerStoreResult> {
  return new Promise((resolve, reject) => {
    store[method]!(
      key,
      (error, result) => (error ? reject(error) : resolve(result!)),
      policy.windowMs,
      policy.limit,
    )
  })
}

const countOf = (result: PeerStoreResult): IncrementCount => ({
  hits: result.current,
  resetMs: Math.max(0, result.ttl),
})

/** A @fastify/rate-limit store as core's increment-store adapter calls it. */
function asIncrementStore(store: PeerStore): IncrementStore {
  return {
    description: 'a @fastify/rate-limit store',
    increment: async (key, policy) => countOf(await call('incr', store, key, policy)),
    read:
      typeof store.read === 'function'
        ? async (key, policy) => countOf(await call('read', store, key, policy))
        : undefined,
  }
}

/** A @fastify/rate-limit store as a Sluice Store. */
export class FastifyPeerStore extends IncrementStoreAdapter {
  constructor(readonly fastifyStore: PeerStore) {
    super(asIncrementStore(fastifyStore))
  }
}

export function isPeerStore(store: object): store is FastifyPeerStore {
  return store instanceof FastifyPeerStore
}
