/**
 * Owns a limiter's operations on a key besides deciding: block, penalize, reward, refund and
 * reset, each one bounded store call.
 */
import { SluiceError } from '../errors'
import type { Store } from '../store/types'
import { boundedStoreCall } from '../store-call/bounded'
import { storeName } from '../store-call/store-name'
import type { Limiter } from './types'
import { checkCost, checkMs } from './checks'
import type { LimiterSettings } from './settings'
import { storeKeyOf } from './store-key'

export type Operations = Pick<Limiter, 'block' | 'penalize' | 'reward' | 'refund' | 'reset'>

export function createOperations(s: LimiterSettings): Operations {
  const { store, guard, clock, pickPolicies, policies } = s
  const storeKey = storeKeyOf(s.prefix, store)

  function bounded<T>(call: () => Promise<T>): Promise<T> {
    return boundedStoreCall(call, guard)
  }

  /** A store method the contract added later; a custom store without it gets a clear error. */
  function supported<M extends 'block' | 'penalize'>(method: M): NonNullable<Store[M]> {
    const fn = store[method] as Store[M] | undefined
    if (typeof fn !== 'function') {
      throw new SluiceError(
        'ERR_SLUICE_UNSUPPORTED',
        `${storeName(store)} does not implement \`${method}\``,
      )
    }
    return fn.bind(store) as NonNullable<Store[M]>
  }

  return {
    async block(key, ms) {
      const k = storeKey(key)
      checkMs(ms, 'ms', false)
      const now = clock()
      const block = supported('block')
      // Whole ms, as every store keeps them (a Postgres bigint, a Redis PX): a fraction of a
      // ms, or an end past 2^53, made the store call fail, with every call batched beside it.
      const until = Math.min(Math.ceil(now + ms), Number.MAX_SAFE_INTEGER)
      await bounded(() => block({ key: k, until, now }))
    },
    async penalize(key, cost = 1) {
      const k = storeKey(key)
      checkCost(cost)
      const penalize = supported('penalize')
      await bounded(() => penalize({ key: k, policies: pickPolicies(), cost, now: clock() }))
    },
    async reward(key, cost = 1) {
      const k = storeKey(key)
      checkCost(cost)
      await bounded(() => store.refund({ key: k, policies: pickPolicies(), cost, now: clock() }))
    },
    async refund(key, refundOptions) {
      const cost = refundOptions?.cost === undefined ? 1 : checkCost(refundOptions.cost)
      const now = clock()
      const at = refundOptions?.at ?? now
      await bounded(() =>
        store.refund({ key: storeKey(key), policies: pickPolicies(), cost, now, at }),
      )
    },
    async reset(key) {
      await bounded(() => store.reset(storeKey(key), policies))
    },
  }
}
