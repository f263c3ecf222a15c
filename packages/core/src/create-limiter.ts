/**
 * Owns createLimiter: the one decide path over any store (a promise chain, with no async frame),
 * composed from the pieces in limiter/ (settings, observation, the in-process hot path, wait and
 * the key operations). The Limiter contract itself is limiter/types.ts.
 */
import type { Decision } from './decision'
import type { ConsumeOptions, LimiterOptions, WaitUntil } from './options'
import type { Policy } from './policy'
import type { StoreRequest, StoreResult } from './store/types'
import { boundedStoreCall } from './store-call/bounded'
import { checkCost, checkWaitUntil } from './limiter/checks'
import { combineOutcomes, shadowDecision } from './limiter/decisions'
import { createObservation } from './limiter/observe'
import { createOperations } from './limiter/operations'
import { resolveLimiterSettings } from './limiter/settings'
import { storeKeyOf } from './limiter/store-key'
import { createWait } from './limiter/wait'
import { inProcessDecide } from './limiter/in-process'
import type { DirectConsume, Limiter } from './limiter/types'
import { registerRefusedKeys } from './metrics/top-refused'
import { topRefusedOf } from './limiter/top-refused'
import { withConcurrency } from './concurrency/limiter'

export type { DirectConsume, Limiter, RefundOptions, WaitOptions } from './limiter/types'

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

  const storeKey = storeKeyOf(prefix, store)

  /**
   * Not async: a promise chain costs one promise and one async frame fewer per decision.
   * `waitUntil`: a consume's (ConsumeOptions), given what a timed-out call leaves running.
   */
  function decide(
    key: string,
    cost: number,
    look: boolean,
    maxDelayMs = 0,
    waitUntil?: WaitUntil,
  ): Promise<Decision> {
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
          false,
          waitUntil,
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

  /**
   * decideNow as a promise: what `consume` returns. The `then` test is written here rather than
   * through isPromise: this site's own type feedback sees the decision's class alone, so V8
   * knows it has no `then` and fulfils the promise directly; through the shared helper it looked
   * `then` up along the prototype chain on every decision (a fifth of a hot-key decision).
   */
  function decideNowAsPromise(key: string, cost: number): Promise<Decision> {
    const decision = decideNow!(key, cost)
    return typeof (decision as { then?: unknown }).then === 'function'
      ? (decision as Promise<Decision>)
      : Promise.resolve(decision)
  }

  /** A consume through the store's promise: decide's, named for the two callers below. */
  function decideRemote(key: string, cost: number, waitUntil?: WaitUntil): Promise<Decision> {
    return decide(key, cost, false, 0, waitUntil)
  }

  /**
   * A consume of a checked cost: synchronous for an in-process store (which leaves nothing
   * running, so it takes no waitUntil), else through decide.
   */
  const consumeCost: (key: string, cost: number, waitUntil?: WaitUntil) => Promise<Decision> =
    decideNow === undefined ? decideRemote : decideNowAsPromise

  /** consume(key, options): checks the cost and waitUntil, then decides as consume(key) does. */
  function consumeWithOptions(key: string, consumeOptions: ConsumeOptions): Promise<Decision> {
    let cost = 1
    let waitUntil: WaitUntil | undefined
    try {
      if (consumeOptions?.cost !== undefined) cost = checkCost(consumeOptions.cost)
      waitUntil = checkWaitUntil(consumeOptions?.waitUntil)
    } catch (error) {
      return Promise.reject(error)
    }
    return consumeCost(key, cost, waitUntil)
  }

  /** `get` and its alias `peek`: what a request would see now, counting nothing. */
  function lookAt(key: string): Promise<Decision> {
    return decide(key, 0, true)
  }

  const wait = createWait(settings, decide)
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
    ...createOperations(settings),
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
  // Its caller checked the cost (the HTTP pipeline, once, as an option): no check per request.
  const consumeDirect: DirectConsume = decideNow ?? decideRemote
  if (settings.concurrency === undefined) return { limiter, consumeDirect }
  return withConcurrency(limiter, { ...settings, gate: settings.concurrency })
}
