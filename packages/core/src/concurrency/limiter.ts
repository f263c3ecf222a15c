/**
 * Owns a limiter with a `concurrency` limit: a slot first, then the rate policies (all or
 * nothing: a request the rate policies refuse gives its slot back at once), and the Decision
 * that lists both, with the slot's lease to release when the request ends.
 */
import type { DirectConsume, Limiter } from '../limiter/types'
import type { Decision, PolicyDecision } from '../decision'
import { ConfigError } from '../errors'
import { checkCost, checkWaitUntil } from '../limiter/checks'
import { degradedDecision } from '../limiter/decisions'
import { storeKeyOf } from '../limiter/store-key'
import { registerRefusedKeys, type RefusedKeys } from '../metrics/top-refused'
import type { ConsumeOptions, StoreErrorMode } from '../options'
import type { Policy } from '../policy'
import type { Store } from '../store/types'
import type { DecisionReporter } from '../events'
import { toStoreError, type StoreGuard } from '../store-call/bounded'
import type { ConcurrencyGate, SlotAttempt } from './gate'
import { concurrencySlotKey, type SlotLease } from './slots'

/** What a refusal for want of a slot tells the client to wait: a slot's end is not known ahead. */
export const SLOT_RETRY_MS = 1000

/** Each concurrency limiter's gate, for the recorders' `watch` and the HTTP limiter's gauges. */
const gates = new WeakMap<object, ConcurrencyGate>()

export function gateOf(limiter: object | undefined): ConcurrencyGate | undefined {
  return limiter === undefined ? undefined : gates.get(limiter)
}

/** What withConcurrency needs of the limiter it wraps. */
export interface ConcurrencyContext {
  readonly gate: ConcurrencyGate
  /** The rate policies (none for a concurrency-only limiter). */
  readonly policies: readonly Policy[]
  /** The limiter's key prefix: a slot is held under the key its rate state has. */
  readonly prefix: string
  /** The limiter's store (whether it is in process decides how keys are written). */
  readonly store: Pick<Store, 'local'>
  readonly onStoreError: StoreErrorMode
  readonly guard: StoreGuard | undefined
  readonly clock: () => number
  readonly refused: RefusedKeys | undefined
  /** The onDecision reporter; undefined without a hook. */
  readonly report: DecisionReporter | undefined
}

function slotOutcome(gate: ConcurrencyGate, attempt: SlotAttempt): PolicyDecision {
  const policy = gate.policy
  const allowed = attempt.lease !== undefined
  return {
    policy,
    allowed,
    remaining: Math.max(0, policy.limit - attempt.inFlight),
    resetMs: 0,
    retryAfterMs: allowed ? 0 : SLOT_RETRY_MS,
    delayMs: 0,
  }
}

/** A decision of the slot alone (a concurrency-only limiter, or the rate state unreadable). */
function slotDecision(slot: PolicyDecision, at: number, lease: SlotLease | undefined): Decision {
  const { policy, allowed, remaining, resetMs, retryAfterMs } = slot
  const decision = { allowed, limit: policy.limit, remaining, resetMs, retryAfterMs, delayMs: 0 }
  return { ...decision, policy, policies: [slot], degraded: false, at, slot: lease }
}

/** The rate decision with the slot's outcome last; the slot binds when it refused or is tighter. */
function merged(rate: Decision, slot: PolicyDecision, lease: SlotLease | undefined): Decision {
  const binds = !slot.allowed || (rate.allowed && slot.remaining < rate.remaining)
  const allowed = rate.allowed && slot.allowed
  return {
    allowed,
    limit: binds ? slot.policy.limit : rate.limit,
    remaining: binds ? slot.remaining : rate.remaining,
    resetMs: binds ? slot.resetMs : rate.resetMs,
    retryAfterMs: allowed ? 0 : Math.max(slot.retryAfterMs, rate.retryAfterMs),
    delayMs: allowed ? rate.delayMs : 0,
    policy: binds ? slot.policy : rate.policy,
    policies: [...rate.policies, slot],
    degraded: rate.degraded,
    at: rate.at,
    slot: lease,
  }
}

/**
 * Wraps `limiter` so that `consume` takes a slot first. The rest of the Limiter (peek, refund,
 * wait, reset...) speaks for the rate policies only; `consumeDirect` (the HTTP fast path)
 * goes through the slot too.
 */
export function withConcurrency(
  limiter: Limiter,
  c: ConcurrencyContext,
): { limiter: Limiter; consumeDirect: DirectConsume } {
  const { gate } = c
  const storeKey = storeKeyOf(c.prefix, c.store)
  const rated = c.policies.length > 0
  const rateConsume = limiter.consume

  /** A slot store failure, answered by onStoreError as a rate store failure is. */
  async function answerStoreError(error: unknown, key: string, cost: number): Promise<Decision> {
    const storeError = toStoreError(error)
    c.guard?.health.answeredWithoutStore()
    const mode = c.onStoreError
    let decision: Decision | undefined
    try {
      if (mode === 'throw') throw storeError
      decision =
        mode === 'allow' || mode === 'deny'
          ? degradedDecision([...c.policies, gate.policy], mode === 'allow', c.clock())
          : { ...(await mode.consume(key, { cost })), degraded: true }
      return decision
    } finally {
      c.report?.(key, gate.policy, decision, false, cost, 0, decision !== undefined, storeError)
    }
  }

  /** The event of a decision the slot made alone (the rate limits' own events come from them). */
  function reported(key: string, cost: number, decision: Decision): Decision {
    c.report?.(key, gate.policy, decision, false, cost, 0, false, undefined)
    return decision
  }

  async function consume(key: string, options?: ConsumeOptions): Promise<Decision> {
    const cost = options?.cost === undefined ? 1 : checkCost(options.cost)
    const waitUntil = checkWaitUntil(options?.waitUntil)
    const slotKey = concurrencySlotKey(storeKey(key), gate.policy.limit)
    let attempt: SlotAttempt
    try {
      attempt = await gate.acquire(slotKey, waitUntil)
    } catch (error) {
      return answerStoreError(error, key, cost)
    }
    const slot = slotOutcome(gate, attempt)
    const lease = attempt.lease
    if (lease === undefined) {
      c.refused?.add(key)
      if (!rated) return reported(key, cost, slotDecision(slot, c.clock(), undefined))
      // Read (not take) the rate state, so the headers list every policy as usual.
      const rate = await limiter.peek(key).catch(() => undefined)
      const refusal =
        rate === undefined
          ? slotDecision(slot, c.clock(), undefined)
          : merged(rate, slot, undefined)
      return reported(key, cost, refusal)
    }
    if (!rated) return reported(key, cost, slotDecision(slot, c.clock(), lease))
    let rate: Decision
    try {
      rate = await rateConsume(key, { cost, waitUntil })
    } catch (error) {
      await lease.release()
      throw error
    }
    if (rate.allowed || rate.shadow !== undefined) return merged(rate, slot, lease)
    await lease.release()
    return merged(rate, { ...slot, remaining: slot.remaining + 1 }, undefined)
  }

  const wrapped: Limiter = {
    ...limiter,
    consume,
    wait: () =>
      Promise.reject(
        new ConfigError(
          'wait() takes no concurrency slot: use consume() with `concurrency: { maxWaitMs }` to wait for one',
        ),
      ),
  }
  gates.set(wrapped, gate)
  if (c.refused !== undefined) registerRefusedKeys(wrapped, c.refused)
  return {
    limiter: wrapped,
    consumeDirect: (key, cost, waitUntil) => consume(key, { cost, waitUntil }),
  }
}
