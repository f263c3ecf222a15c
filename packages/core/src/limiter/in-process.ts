/**
 * Owns the hot path of a limiter over an in-process store (consumeNow): a decision made at once,
 * with no timer, no async frame and no promise unless the store failed. One hard limit on the
 * store that decides one policy at once (Store.consumeOneNow: MemoryStore) gets a path of its
 * own, small enough for V8 to inline the store into.
 */
import type { Decision } from '../decision'
import type { DirectConsume } from './types'
import type { Policy } from '../policy'
import { prefixedKey } from '../store/key-parts'
import type { Store } from '../store/types'
import { combineOutcomes } from './decisions'
import type { Observation } from './observe'
import type { LimiterSettings } from './settings'

/** A store with the single-policy synchronous capability of the Store contract. */
type OneNowStore = Store & Required<Pick<Store, 'consumeOneNow'>>

/**
 * The in-process consume of a checked cost, or undefined when the store has no consumeNow (its
 * decisions go through `decide`, which also reports a bad key for these paths).
 */
export function inProcessDecide(
  settings: LimiterSettings,
  observation: Observation,
  decide: (key: string, cost: number, look: boolean) => Promise<Decision>,
): DirectConsume | undefined {
  const { policies, store, clock, pickPolicies, prefix, onDecision, observed } = settings
  const { answerStoreError, observe, observeStoreError } = observation
  if (store.consumeNow === undefined) return undefined
  const consumeNow = store.consumeNow?.bind(store)
  /** A store that decides a single limit without a request object or an array (MemoryStore). */
  const oneNowStore = store.consumeOneNow !== undefined ? (store as OneNowStore) : undefined
  const syncRequest: { key: string; policies: readonly Policy[]; cost: number; now: number } = {
    key: '',
    policies,
    cost: 1,
    now: 0,
  }

  /**
   * The commonest configuration, one hard limit on the embedded store with no hook and no
   * shadow: the store's Verdict is the whole decision. Its own small function, so that V8
   * inlines the store's decision into it.
   */
  const plain = oneNowStore !== undefined && policies.length === 1 && !observed && settings.hard
  const onlyPolicy = policies[0]
  /** The last client key decidePlain saw, and its store key: a hot key repeats. */
  let lastKey = ''
  let lastStoreKey = prefixedKey(prefix, '')

  function decidePlain(key: string, cost: number): Decision | Promise<Decision> {
    if (typeof key !== 'string') return decide(key, cost, false) // reports the bad key
    if (key !== lastKey) {
      lastKey = key
      lastStoreKey = prefixedKey(prefix, key)
    }
    try {
      const now = clock()
      return (oneNowStore as OneNowStore).consumeOneNow(lastStoreKey, onlyPolicy, cost, now, 0)
    } catch (error) {
      return answerStoreError(error, key, cost)
    }
  }

  /**
   * The hot path for in-process stores: no timer, no async frame, and no promise unless the store
   * failed (onStoreError answers asynchronously).
   */
  function decideSync(key: string, cost: number): Decision | Promise<Decision> {
    if (typeof key !== 'string') return decide(key, cost, false) // reports the bad key
    const applied = pickPolicies()
    const started = onDecision === undefined ? 0 : performance.now()
    let decision: Decision
    try {
      const now = clock()
      const storeKey = prefixedKey(prefix, key)
      if (oneNowStore !== undefined && applied === policies && policies.length === 1) {
        // The store's Verdict, made at `now`, is the whole decision of a single policy.
        decision = oneNowStore.consumeOneNow(storeKey, policies[0], cost, now, 0)
      } else {
        // consumeNow runs to completion before anything else can call it: one request object serves.
        syncRequest.key = storeKey
        syncRequest.policies = applied
        syncRequest.cost = cost
        syncRequest.now = now
        const outcomes = (consumeNow as NonNullable<typeof consumeNow>)(syncRequest)
        decision = combineOutcomes(policies, applied, outcomes, cost, now)
      }
    } catch (error) {
      if (!observed) return answerStoreError(error, key, cost)
      const latency = onDecision === undefined ? 0 : performance.now() - started
      return observeStoreError(error, key, cost, latency)
    }
    if (!observed) return decision
    const latency = onDecision === undefined ? 0 : performance.now() - started
    return observe(key, cost, decision, latency, undefined)
  }

  /**
   * What a consume decides, chosen once: V8 inlines a hot path only while the code it inlines
   * stays small, so the plain configuration gets a path of its own, not a branch in a larger one.
   */
  return plain ? decidePlain : decideSync
}
