/**
 * Owns createLimiter: the Limiter interface, and the one decide path over any store (a promise
 * chain, with no async frame), composed from the pieces in limiter/ (settings, observation, the
 * in-process hot path, wait and the key operations).
 */
import type { Clock } from './clock'
import { isPromise } from './promise'
import type { Decision } from './decision'
import type { ConsumeOptions, LimiterOptions } from './options'
import type { Policy } from './policy'
import type { Store, StoreRequest, StoreResult } from './store/types'
import { boundedStoreCall, toStoreError } from './store-call/bounded'
import { checkCost, checkKey } from './limiter/checks'
import { combineOutcomes, shadowDecision } from './limiter/decisions'
import { createObservation } from './limiter/observe'
import { createOperations } from './limiter/operations'
import { resolveLimiterSettings } from './limiter/settings'
import { createWait } from './limiter/wait'
import { inProcessDecide } from './limiter/in-process'
import { registerRefusedKeys, type RefusedKey } from './metrics/top-refused'
import { topRefusedOf } from './limiter/top-refused'
import { withConcurrency } from './concurrency/limiter'
import { prefixedKey } from './store/key-parts'

export { boundedStoreCall, toStoreError }
export {
  abortError,
  abortReason,
  badArgument,
  checkCost,
  checkMs,
  checkStore,
  checkStoreErrorMode,
  describeMode,
} from './limiter/checks'
export { combineOutcomes, degradedDecision } from './limiter/decisions'

export interface WaitOptions {
  /** Units to take. @default 1 */
  cost?: number
  /**
   * The longest the caller will wait: a request whose slot is further away resolves as rejected
   * (`allowed: false`) at once, taking nothing. @default the longest window of the limiter's policies
   */
  maxWaitMs?: number
  /** Aborting gives the reserved slot back and rejects the wait with the signal's reason. @default undefined */
  signal?: AbortSignal
}

export interface RefundOptions {
  /** Units to give back. @default 1 */
  cost?: number
  /** When the refunded request was consumed (ms on the limiter's clock). @default now */
  at?: number
}

/** Limits keys against its policies through its store. */
export interface Limiter {
  /** Decides one request of `cost` (default 1) and, when admitted, counts it. */
  consume(key: string, options?: ConsumeOptions): Promise<Decision>
  /** What a request would see now (`remaining` is what is left), counting nothing. Same as `get`. */
  peek(key: string): Promise<Decision>
  /** The key's state without consuming: what a request would see now (`remaining` is what is left). */
  get(key: string): Promise<Decision>
  /**
   * Refuses the key for `ms` whatever its counters say (kept apart from them, so consumes do not
   * overwrite it); a later block replaces an earlier one; `reset` lifts it.
   */
  block(key: string, ms: number): Promise<void>
  /** Takes `cost` units from every policy whatever the limit says, never beyond full. */
  penalize(key: string, cost?: number): Promise<void>
  /** Gives `cost` units back to every policy, from the newest usage, never below empty. */
  reward(key: string, cost?: number): Promise<void>
  /**
   * Reserves the next slot in one store call and resolves with the Decision once the caller may
   * go (after its `delayMs`). A slot further away than `maxWaitMs` resolves as rejected at once,
   * taking nothing; an aborted `signal` gives the slot back and rejects. Meter algorithms only
   * (token-bucket, leaky-bucket, gcra): a limiter with a counter policy throws a ConfigError.
   */
  wait(key: string, options?: WaitOptions): Promise<Decision>
  /** Gives back units an admitted request took (e.g. skipSuccessfulRequests); nothing into a reset window. */
  refund(key: string, options?: RefundOptions): Promise<void>
  /** Forgets the key's state under every policy. */
  reset(key: string): Promise<void>
  /**
   * The `n` keys this limiter refused most in the current and the last interval, most first,
   * as given to `consume` (not hashed). Needs the `topRefused` option (else a ConfigError).
   * @param n @default 10
   */
  topRefused(n?: number): RefusedKey[]
  /** The nominal policies, in the order given. */
  readonly policies: readonly Policy[]
  readonly store: Store
  readonly clock: Clock
}

/**
 * Creates a limiter. Every option is checked here, once (limiter/settings.ts): a bad value
 * throws a ConfigError that names the option and the value.
 */
export function createLimiter(options: LimiterOptions): Limiter {
  return buildLimiter(options).limiter
}

/**
 * Internal (the HTTP pipeline builds its limiters with it): createLimiter's limiter, and its
 * `consume` of a checked cost without the promise for a limiter over an in-process store
 * (`consumeNow`), and for any other store the store call's own promise chain, with no wrapper
 * around it. Same decision, same events, same errors: a failure still answers with a promise
 * (rejected or onStoreError's).
 */
export function buildLimiter(options: LimiterOptions): {
  limiter: Limiter
  consumeDirect: DirectConsume
} {
  const settings = resolveLimiterSettings(options)
  const { policies, store, clock, pickPolicies, prefix, guard, undoLate, shadow } = settings
  const { onDecision, observed } = settings
  const observation = createObservation(settings)
  const { answerStoreError, observe, observeStoreError } = observation

  function storeKey(key: string): string {
    checkKey(key)
    return prefixedKey(prefix, key)
  }

  /** Not async: a promise chain costs one promise and one async frame fewer per decision. */
  function decide(key: string, cost: number, look: boolean, maxDelayMs = 0): Promise<Decision> {
    let applied: readonly Policy[]
    let request: StoreRequest
    try {
      applied = pickPolicies()
      request =
        maxDelayMs > 0
          ? { key: storeKey(key), policies: applied, cost, now: clock(), maxDelayMs }
          : { key: storeKey(key), policies: applied, cost, now: clock() }
    } catch (error) {
      return Promise.reject(error)
    }
    const timed = onDecision !== undefined && !look
    const started = timed ? performance.now() : 0
    const sent = look
      ? boundedStoreCall(() => store.peek(request), guard)
      : boundedStoreCall(
          () => store.consume(request),
          guard,
          undoLate === undefined ? undefined : (result) => undoLate(request, result),
        )
    return sent.then(
      (result) => decided(key, cost, look, applied, request, result, timed ? started : -1),
      (error: unknown) => {
        if (!observed || look) return answerStoreError(error, key, Math.max(cost, 1))
        return observeStoreError(error, key, cost, timed ? performance.now() - started : 0)
      },
    )
  }

  /** decide's answer once the store has answered; `started` is -1 when not timed. */
  function decided(
    key: string,
    cost: number,
    look: boolean,
    applied: readonly Policy[],
    request: StoreRequest,
    result: StoreResult,
    started: number,
  ): Decision | Promise<Decision> {
    const decision = combineOutcomes(policies, applied, result.outcomes, cost, request.now)
    if (!observed) return decision
    // peek decides nothing, so no event; a shadow limiter's peek still never reads as blocked.
    if (look) return shadow ? shadowDecision(decision) : decision
    return observe(key, cost, decision, started >= 0 ? performance.now() - started : 0, undefined)
  }

  const decideNow = inProcessDecide(settings, observation, decide)

  /** decideNow as a promise: what `consume` returns. */
  function decideNowAsPromise(key: string, cost: number): Promise<Decision> {
    const decision = decideNow!(key, cost)
    return isPromise(decision) ? decision : Promise.resolve(decision)
  }

  /** A consume through the store's promise: decide's, named for the two callers below. */
  function decideRemote(key: string, cost: number): Promise<Decision> {
    return decide(key, cost, false)
  }

  /** A consume of a checked cost: synchronous for an in-process store, else through decide. */
  const consumeCost: (key: string, cost: number) => Promise<Decision> =
    decideNow === undefined ? decideRemote : decideNowAsPromise

  /** consume(key, options): checks the cost, then decides as consume(key) does. */
  function consumeWithOptions(key: string, consumeOptions: ConsumeOptions): Promise<Decision> {
    let cost = 1
    try {
      if (consumeOptions?.cost !== undefined) cost = checkCost(consumeOptions.cost)
    } catch (error) {
      return Promise.reject(error)
    }
    return consumeCost(key, cost)
  }

  /** `get` and its alias `peek`: what a request would see now, counting nothing. */
  function lookAt(key: string): Promise<Decision> {
    return decide(key, 0, true)
  }

  const wait = createWait(settings, decide, storeKey)
  const limiter: Limiter = {
    policies,
    store,
    clock,
    consume(key, consumeOptions) {
      if (consumeOptions !== undefined) return consumeWithOptions(key, consumeOptions)
      return consumeCost(key, 1)
    },
    get: lookAt,
    peek: lookAt,
    ...createOperations(settings, storeKey),
    topRefused: topRefusedOf(settings.refused),
    wait(key, waitOptions) {
      try {
        return wait(key, waitOptions)
      } catch (error) {
        return Promise.reject(error)
      }
    },
  }
  if (settings.refused !== undefined) registerRefusedKeys(limiter, settings.refused)
  const consumeChecked = decideNow ?? decideRemote
  function consumeDirect(key: string, cost: number): Decision | Promise<Decision> {
    try {
      checkCost(cost)
    } catch (error) {
      return Promise.reject(error)
    }
    return consumeChecked(key, cost)
  }
  if (settings.concurrency === undefined) return { limiter, consumeDirect }
  return withConcurrency(limiter, { ...settings, gate: settings.concurrency, storeKey })
}

/** What `consume(key, { cost })` decides: at once when the store is in-process, else its promise. */
export type DirectConsume = (key: string, cost: number) => Decision | Promise<Decision>
