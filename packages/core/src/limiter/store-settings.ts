/**
 * Owns the options every limiter over a store resolves alike, createLimiter's and
 * createRulesLimiter's: the store and its protection (timeout, breaker, calls in flight,
 * outage log), the clock, the key prefix and the onDecision hook. Checked once, at creation.
 */
import { monotonicTurnClock, systemClock, turnClock, type Clock } from '../clock'
import { invalidOption } from '../errors'
import { createDecisionReporter, type DecisionHook, type DecisionReporter } from '../events'
import { MemoryStore } from '../store/memory-store'
import type { Store } from '../store/types'
import { protectStore, type StoreProtection } from '../store-call/guard'
import { checkStore } from './checks'

/** The options read here, as both limiters take them. */
export interface StoreOptionsInput {
  store?: unknown
  clock?: unknown
  prefix?: unknown
  timeoutMs?: unknown
  breaker?: unknown
  maxInFlight?: unknown
  logger?: unknown
  onDecision?: unknown
}

export interface StoreSettings {
  readonly guard: StoreProtection['guard']
  readonly undoLate: StoreProtection['undoLate']
  readonly store: Store
  readonly clock: Clock
  readonly prefix: string
  readonly onDecision: DecisionHook | undefined
  /** Undefined without a hook: nothing is measured or built for events then. */
  readonly report: DecisionReporter | undefined
}

function checkTimeoutMs(value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    invalidOption('timeoutMs', value, 'a positive number of ms')
  }
  return value
}

/**
 * Resolves the store options; `mode` is the onStoreError in force, as the outage log line
 * names it. A consume that timed out was answered without the store: if the store admits it
 * late, that charge is given back (undoLate; see docs/reliability.md).
 */
/**
 * A given clock as a shared store reads it: whole ms. Those stores keep whole ms (a Postgres
 * bigint, a Redis PX, a memcached TTL), and a clock with a fraction (`performance.timeOrigin +
 * performance.now()`) failed their calls; in process a fraction is kept.
 */
function wholeMs(clock: Clock): Clock {
  // Date.now's clocks read whole ms already: kept as they are (no call more per decision).
  if (clock === systemClock || clock === turnClock) return clock
  return () => Math.floor(clock())
}

export function resolveStoreSettings(options: StoreOptionsInput, mode: string): StoreSettings {
  const store: Store = options.store === undefined ? new MemoryStore() : checkStore(options.store)
  // In process nothing else needs this clock: decide on one a wall-clock step cannot move.
  const given = (options.clock ?? (store.local === true ? monotonicTurnClock : turnClock)) as Clock
  if (typeof given !== 'function') invalidOption('clock', given, 'a function returning ms')
  const clock = store.local === true || options.clock === undefined ? given : wholeMs(given)
  const prefix = options.prefix ?? ''
  if (typeof prefix !== 'string') invalidOption('prefix', prefix, 'a string')
  const timeoutMs = checkTimeoutMs(options.timeoutMs ?? 1000)
  const { guard, undoLate } = protectStore(store, clock, { ...options, timeoutMs }, mode)
  const onDecision = options.onDecision as DecisionHook | undefined
  if (onDecision !== undefined && typeof onDecision !== 'function') {
    invalidOption('onDecision', onDecision, 'a function receiving each DecisionEvent')
  }
  return {
    store,
    clock,
    prefix,
    guard,
    undoLate,
    onDecision,
    // Without a hook nothing measures, builds or allocates anything for events.
    report: onDecision === undefined ? undefined : createDecisionReporter(onDecision),
  }
}
