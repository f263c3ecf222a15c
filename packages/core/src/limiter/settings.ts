/**
 * Owns resolving createLimiter's options, once: every check (a bad value throws a ConfigError
 * naming the option and the value) and default, into the LimiterSettings the limiter reads.
 */
import { turnClock, type Clock } from '../clock'
import { invalidOption } from '../errors'
import { createDecisionReporter, type DecisionHook, type DecisionReporter } from '../events'
import {
  checkKnownOptions,
  resolvePolicies,
  type LimiterOptions,
  type StoreErrorMode,
} from '../options'
import type { Policy } from '../policy'
import { MemoryStore } from '../store/memory-store'
import type { Store } from '../store/types'
import { protectStore, type StoreProtection } from '../store-call/guard'
import { resolveThrottle } from '../throttle'
import { checkStore, checkStoreErrorMode, describeMode } from './checks'

const KNOWN_OPTIONS = [
  'algorithm',
  'limit',
  'window',
  'burst',
  'precision',
  'name',
  'limits',
  'store',
  'clock',
  'throttle',
  'onStoreError',
  'timeoutMs',
  'prefix',
  'shadow',
  'onDecision',
  'breaker',
  'maxInFlight',
  'logger',
]

/** A limiter's options, checked and defaulted. */
export interface LimiterSettings {
  readonly policies: readonly Policy[]
  readonly store: Store
  readonly clock: Clock
  /** The policies a request is held to now (the throttle mode's choice). */
  readonly pickPolicies: () => readonly Policy[]
  readonly onStoreError: StoreErrorMode
  readonly prefix: string
  /** Timeouts, breaker and late refunds of a shared store (StoreProtection). */
  readonly guard: StoreProtection['guard']
  readonly undoLate: StoreProtection['undoLate']
  readonly shadow: boolean
  readonly onDecision: DecisionHook | undefined
  /** Shadow mode or a hook: decisions are observed (checked once per decision). */
  readonly observed: boolean
  /** Undefined without a hook: nothing is measured or built for events then. */
  readonly report: DecisionReporter | undefined
  /** `throttle` unset or 'hard'. */
  readonly hard: boolean
}

function checkTimeoutMs(value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    invalidOption('timeoutMs', value, 'a positive number of ms')
  }
  return value
}

export function resolveLimiterSettings(options: LimiterOptions): LimiterSettings {
  if (options === null || typeof options !== 'object')
    invalidOption('options', options, 'an object')
  checkKnownOptions(options, KNOWN_OPTIONS, 'createLimiter')
  const policies = resolvePolicies(options)
  const store: Store = options.store === undefined ? new MemoryStore() : checkStore(options.store)
  for (const policy of policies) {
    if (store.unsupportedAlgorithms?.includes(policy.algorithm)) {
      invalidOption(
        'algorithm',
        policy.algorithm,
        `an algorithm ${store.constructor.name} supports`,
      )
    }
  }
  const clock = options.clock ?? turnClock
  if (typeof clock !== 'function') invalidOption('clock', clock, 'a function returning ms')
  const pickPolicies = resolveThrottle(options.throttle, policies)
  const onStoreError = checkStoreErrorMode(options.onStoreError ?? 'throw')
  const timeoutMs = checkTimeoutMs(options.timeoutMs ?? 1000)
  const prefix = options.prefix ?? ''
  if (typeof prefix !== 'string') invalidOption('prefix', prefix, 'a string')
  // A consume that timed out was answered without the store: if the store admits it late, that
  // charge is given back (undoLate; see docs/reliability.md).
  const { guard, undoLate } = protectStore(
    store,
    clock,
    { ...options, timeoutMs },
    describeMode(onStoreError),
  )
  const shadow = options.shadow ?? false
  if (typeof shadow !== 'boolean') invalidOption('shadow', shadow, 'a boolean')
  const onDecision: DecisionHook | undefined = options.onDecision
  if (onDecision !== undefined && typeof onDecision !== 'function') {
    invalidOption('onDecision', onDecision, 'a function receiving each DecisionEvent')
  }
  return {
    policies,
    store,
    clock,
    pickPolicies,
    onStoreError,
    prefix,
    guard,
    undoLate,
    shadow,
    onDecision,
    observed: shadow || onDecision !== undefined,
    report: onDecision === undefined ? undefined : createDecisionReporter(onDecision),
    hard: options.throttle === undefined || options.throttle === 'hard',
  }
}
