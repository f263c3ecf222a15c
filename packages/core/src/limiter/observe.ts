/**
 * Owns what a limiter does around a decision besides deciding: answering a store failure by
 * `onStoreError`, shadow mode, and the `onDecision` events (a failing hook never changes a
 * decision).
 */
import type { Decision } from '../decision'
import type { StoreError } from '../errors'
import { toStoreError } from '../store-call/bounded'
import { degradedDecision, shadowDecision } from './decisions'
import type { LimiterSettings } from './settings'

export interface Observation {
  /** A store failure answered by `onStoreError` (throws the StoreError for 'throw'). */
  answerStoreError(error: unknown, key: string, cost: number): Promise<Decision>
  /** Shadow mode and the hook, applied to a decision the store (or onStoreError) made. */
  observe(
    key: string,
    cost: number,
    decision: Decision,
    storeLatencyMs: number,
    storeError: StoreError | undefined,
  ): Decision
  /** answerStoreError, observed. */
  observeStoreError(
    error: unknown,
    key: string,
    cost: number,
    storeLatencyMs: number,
  ): Promise<Decision>
}

export function createObservation(s: LimiterSettings): Observation {
  const { policies, onStoreError, clock, guard, shadow, onDecision, report, refused } = s

  async function answerStoreError(error: unknown, key: string, cost: number): Promise<Decision> {
    const storeError = toStoreError(error)
    guard?.health.answeredWithoutStore()
    if (onStoreError === 'throw') throw storeError
    if (onStoreError === 'allow') return degradedDecision(policies, true, clock())
    if (onStoreError === 'deny') return degradedDecision(policies, false, clock())
    const decision = await onStoreError.consume(key, { cost })
    return { ...decision, degraded: true }
  }

  /** Reports one decision to the hook. */
  function emit(
    key: string,
    cost: number,
    decision: Decision | undefined,
    storeLatencyMs: number,
    storeError: StoreError | undefined,
  ): void {
    report!(
      key,
      decision === undefined ? policies[0] : decision.policy,
      decision,
      shadow,
      cost,
      storeLatencyMs,
      decision === undefined ? false : decision.degraded,
      storeError,
    )
  }

  function observe(
    key: string,
    cost: number,
    decision: Decision,
    storeLatencyMs: number,
    storeError: StoreError | undefined,
  ): Decision {
    if (onDecision !== undefined) emit(key, cost, decision, storeLatencyMs, storeError)
    if (refused !== undefined && !decision.allowed) refused.add(key)
    return shadow ? shadowDecision(decision) : decision
  }

  async function observeStoreError(
    error: unknown,
    key: string,
    cost: number,
    storeLatencyMs: number,
  ): Promise<Decision> {
    const storeError = toStoreError(error)
    let decision: Decision
    try {
      decision = await answerStoreError(storeError, key, cost)
    } catch (thrown) {
      // 'throw' (or a failing fallback): no decision, but the failure is still worth counting.
      if (onDecision !== undefined) emit(key, cost, undefined, storeLatencyMs, storeError)
      throw thrown
    }
    return observe(key, cost, decision, storeLatencyMs, storeError)
  }

  return { answerStoreError, observe, observeStoreError }
}
