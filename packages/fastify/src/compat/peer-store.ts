/**
 * Owns the seam for @fastify/rate-limit stores: a peer store object, used as is, behind Sluice's
 * Store contract, so the one core limiter decides with it. The peer store counts and times each
 * key's window itself (its `incr` is atomic on its side), so consume is its `incr` and peek its
 * `read`; what the contract asks beyond them (refunds, penalties, blocks, resets) has no
 * counterpart in the peer interface and is left undone.
 */
import type { PolicyOutcome, Store, StoreRequest, StoreResult } from '@sluice/core'
import type { PeerStore, PeerStoreResult } from './types'

export const NO_READ_MESSAGE =
  'The configured rate-limit store does not implement a `read` method, which is required to use `{ increment: false }`'

/** Marks the Stores made here, so the counter knows the peer store times its own windows. */
export const PEER_STORE = Symbol('sluice.peerStore')

export interface PeerStoreAsStore extends Store {
  readonly [PEER_STORE]: PeerStore
}

function call(
  method: 'incr' | 'read',
  store: PeerStore,
  request: StoreRequest,
): Promise<PeerStoreResult> {
  const policy = request.policies[0]!
  return new Promise((resolve, reject) => {
    store[method]!(
      request.key,
      (error, result) => (error ? reject(error) : resolve(result!)),
      policy.windowMs,
      policy.limit,
    )
  })
}

function outcome(result: PeerStoreResult, limit: number): StoreResult {
  const allowed = result.current <= limit
  const ttl = Math.max(0, result.ttl)
  const only: PolicyOutcome = {
    allowed,
    remaining: Math.max(0, limit - result.current),
    resetMs: ttl,
    retryAfterMs: allowed ? 0 : ttl,
    delayMs: 0,
  }
  return { outcomes: [only] }
}

export function peerStoreAsStore(store: PeerStore): PeerStoreAsStore {
  return {
    [PEER_STORE]: store,
    async consume(request) {
      return outcome(await call('incr', store, request), request.policies[0]!.limit)
    },
    async peek(request) {
      if (typeof store.read !== 'function') throw new Error(NO_READ_MESSAGE)
      return outcome(await call('read', store, request), request.policies[0]!.limit)
    },
    async refund() {},
    async penalize() {},
    async block() {},
    async reset() {},
  }
}

export function isPeerStore(store: Store): store is PeerStoreAsStore {
  return PEER_STORE in store
}
