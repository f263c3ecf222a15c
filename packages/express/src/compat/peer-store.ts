/**
 * Owns mapping an express-rate-limit store (its `increment/decrement/resetKey/get` interface,
 * or the pre-v6 `incr` one) onto core's increment-store adapter, so the one core pipeline
 * counts with it.
 */
import { SluiceError } from '@sluice/core'
import { invalidOption } from '@sluice/core/adapter'
import { IncrementStoreAdapter, type IncrementCount, type IncrementStore } from '@sluice/http'
import type { ClientRateLimitInfo, LegacyStore, Store } from './types'

type AnyStore = Partial<Store & LegacyStore> & Record<string, unknown>

const isFunction = (value: unknown): boolean => typeof value === 'function'

/** True for a store written for express-rate-limit (as opposed to a Sluice Store). */
export function isPeerStore(store: unknown): store is Store | LegacyStore {
  if (typeof store !== 'object' || store === null) return false
  const candidate = store as AnyStore
  return !isFunction(candidate.consume)
}

/** Checks the store's methods once, at creation: a ConfigError naming `store` otherwise. */
export function checkPeerStore(store: Store | LegacyStore): void {
  const candidate = store as AnyStore
  const counts = isFunction(candidate.increment) || isFunction(candidate.incr)
  const optional = (name: string) => candidate[name] === undefined || isFunction(candidate[name])
  if (
    !counts ||
    !isFunction(candidate.decrement) ||
    !isFunction(candidate.resetKey) ||
    !optional('init') ||
    !optional('resetAll')
  ) {
    invalidOption(
      'store',
      store,
      'a store with increment (or incr), decrement and resetKey methods (and init, resetAll only as methods), or a Sluice Store',
    )
  }
}

/** The store's `increment`, or its pre-v6 `incr` behind a promise. */
function incrementOf(store: Store | LegacyStore): (key: string) => Promise<ClientRateLimitInfo> {
  const modern = store as Partial<Store>
  if (typeof modern.increment === 'function') {
    const increment = modern.increment.bind(store)
    return async (key) => increment(key)
  }
  const legacy = store as LegacyStore
  return (key) =>
    new Promise((resolve, reject) => {
      legacy.incr(key, (error, totalHits, resetTime) => {
        if (error) reject(error)
        else resolve({ totalHits, resetTime })
      })
    })
}

/** A count as the shared adapter reads it; a store that gives no reset time resets a window from now. */
function countOf(info: ClientRateLimitInfo, now: number): IncrementCount {
  const resetMs = info.resetTime instanceof Date ? info.resetTime.getTime() - now : undefined
  return { hits: info.totalHits, resetMs }
}

/** An express-rate-limit store as core's increment-store adapter calls it. */
function asIncrementStore(store: Store | LegacyStore): IncrementStore {
  const increment = incrementOf(store)
  const get = (store as Partial<Store>).get
  return {
    description: 'an express-rate-limit store',
    increment: async (key, _policy, now) => countOf(await increment(key), now),
    read:
      typeof get === 'function'
        ? async (key, _policy, now) => {
            const info = await get.call(store, key)
            return info === undefined ? undefined : countOf(info, now)
          }
        : undefined,
    decrement: async (key) => {
      await store.decrement(key)
    },
    resetKey: async (key) => {
      await store.resetKey(key)
    },
  }
}

/**
 * An express-rate-limit store as a Sluice Store, through core's shared adapter. Its windows are
 * its own (express-rate-limit's stores count fixed windows from each key's first hit), and every
 * hit counts, rejected ones too, as they do there. `onFailure` sees each failed count before
 * the limiter does.
 */
export class PeerStore extends IncrementStoreAdapter {
  constructor(
    readonly expressStore: Store | LegacyStore,
    onFailure: ((error: unknown) => void) | undefined,
  ) {
    super(asIncrementStore(expressStore), onFailure)
  }

  /** Takes back one hit of the key, as express-rate-limit's skip options do. */
  async takeBack(key: string): Promise<void> {
    await this.expressStore.decrement(key)
  }

  /** The store's own `get`; a store without one cannot answer (express-rate-limit throws too). */
  get(key: string): Promise<ClientRateLimitInfo | undefined> | ClientRateLimitInfo | undefined {
    const get = (this.expressStore as Partial<Store>).get
    if (typeof get !== 'function') {
      throw new SluiceError('ERR_SLUICE_UNSUPPORTED', 'the store does not implement get(key)')
    }
    return get.call(this.expressStore, key)
  }
}
