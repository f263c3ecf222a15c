/**
 * Owns `limiter.wait`: reserving a slot ahead of time (only the meters, a debt that drains, can
 * express one), holding the caller until it, and giving it back when the wait is aborted.
 */
import { ConfigError } from '../errors'
import type { Decision } from '../decision'
import { listNames } from '../algorithms/registry'
import { METER_ALGORITHMS } from '../policy'
import { boundedStoreCall } from '../store-call/bounded'
import type { WaitOptions } from './types'
import type { WaitUntil } from '../options'
import { abortReason, badArgument, checkCost, checkKey, checkMs, checkWaitUntil } from './checks'
import type { LimiterSettings } from './settings'
import { storeKeyOf } from './store-key'

/** The limiter's decide: a consume of `cost` that may be held up to `maxDelayMs`. */
/**
 * Resolves with `value` after `delayMs`, or, when `signal` aborts first, settles as `onAbort`
 * does (it gives the reserved slot back). Not unref'd: a caller waiting for its slot keeps the
 * process alive, as any timer would.
 */
export function holdFor<T>(
  delayMs: number,
  value: T,
  signal: AbortSignal | undefined,
  onAbort: () => Promise<T>,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', aborted)
      resolve(value)
    }, delayMs)
    function aborted(): void {
      clearTimeout(timer)
      onAbort().then(resolve, reject)
    }
    signal?.addEventListener('abort', aborted, { once: true })
  })
}

type Decide = (
  key: string,
  cost: number,
  look: boolean,
  maxDelayMs?: number,
  waitUntil?: WaitUntil,
) => Promise<Decision>

export function createWait(
  s: LimiterSettings,
  decide: Decide,
): (key: string, waitOptions: WaitOptions | undefined) => Promise<Decision> {
  const { policies, store, guard, clock, pickPolicies, shadow } = s
  const storeKey = storeKeyOf(s.prefix, store)
  const counterPolicy = policies.find((policy) => !METER_ALGORITHMS.has(policy.algorithm))
  const longestWindow = policies.reduce((ms, policy) => Math.max(ms, policy.windowMs), 0)

  /** An aborted wait: refunds the reserved slot, then rejects with the signal's reason. */
  async function giveBack(
    key: string,
    cost: number,
    decision: Decision,
    signal: AbortSignal,
  ): Promise<never> {
    if (!decision.degraded) {
      const refund = { key: storeKey(key), policies: pickPolicies(), cost, now: clock() }
      await boundedStoreCall(() => store.refund({ ...refund, at: decision.at }), guard)
    }
    throw abortReason(signal)
  }

  /** Holds an admitted decision for its delay; an abort gives the slot back. */
  function hold(key: string, cost: number, decision: Decision, signal?: AbortSignal) {
    if (!decision.allowed || decision.delayMs <= 0) return decision
    if (signal?.aborted) return giveBack(key, cost, decision, signal)
    return holdFor(decision.delayMs, decision, signal, () => giveBack(key, cost, decision, signal!))
  }

  /** Validates synchronously (throws), then reserves, holds and settles the slot. */
  return function wait(key, waitOptions) {
    checkKey(key)
    if (waitOptions !== undefined && (typeof waitOptions !== 'object' || waitOptions === null)) {
      badArgument('options', waitOptions, 'an object { cost, maxWaitMs, signal }')
    }
    if (counterPolicy !== undefined) {
      throw new ConfigError(
        `\`wait\` needs a meter algorithm (${listNames([...METER_ALGORITHMS])}) to reserve a slot; policy ${JSON.stringify(counterPolicy.name)} uses ${JSON.stringify(counterPolicy.algorithm)}`,
      )
    }
    const cost = waitOptions?.cost === undefined ? 1 : checkCost(waitOptions.cost)
    const maxWaitMs =
      waitOptions?.maxWaitMs === undefined
        ? longestWindow
        : checkMs(waitOptions.maxWaitMs, 'maxWaitMs', true)
    const signal = waitOptions?.signal
    if (
      signal !== undefined &&
      (typeof signal !== 'object' || signal === null || typeof signal.aborted !== 'boolean')
    ) {
      badArgument('signal', signal, 'an AbortSignal')
    }
    const waitUntil = checkWaitUntil(waitOptions?.waitUntil)
    if (signal?.aborted) return Promise.reject(abortReason(signal))
    // A shadow limiter never holds anyone: it decides (and reports) as consume does.
    if (shadow) return decide(key, cost, false, 0, waitUntil)
    return decide(key, cost, false, maxWaitMs, waitUntil).then((decision) =>
      hold(key, cost, decision, signal),
    )
  }
}
