/**
 * Owns resolving createLimiter's options, once: every check (a bad value throws a ConfigError
 * naming the option and the value) and default, into the LimiterSettings the limiter reads.
 */
import type { Clock } from '../clock'
import { invalidOption } from '../errors'
import type { DecisionHook, DecisionReporter } from '../events'
import {
  LIMIT_OPTION_NAMES,
  checkKnownOptions,
  resolvePolicies,
  type LimiterOptions,
  type StoreErrorMode,
} from '../options'
import type { Policy } from '../policy'
import type { Store } from '../store/types'
import type { StoreProtection } from '../store-call/guard'
import { storeName } from '../store-call/store-name'
import { resolveThrottle } from '../throttle'
import { RefusedKeys, resolveTopRefused } from '../metrics/top-refused'
import type { StoreLogger } from '../store-call/health'
import { ConcurrencyGate } from '../concurrency/gate'
import { noSlots, resolveConcurrency } from '../concurrency/policy'
import { checkStoreErrorMode, describeMode } from './checks'
import { resolveStoreSettings } from './store-settings'

const KNOWN_OPTIONS = [
  ...LIMIT_OPTION_NAMES,
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
  'topRefused',
  'concurrency',
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
  /** The `topRefused` summary; undefined when off. */
  readonly refused: RefusedKeys | undefined
  /** The `concurrency` limit's slots; undefined without one. */
  readonly concurrency: ConcurrencyGate | undefined
}

export function resolveLimiterSettings(options: LimiterOptions): LimiterSettings {
  if (options === null || typeof options !== 'object')
    invalidOption('options', options, 'an object')
  checkKnownOptions(options, KNOWN_OPTIONS, 'createLimiter')
  // A concurrency-only limiter has no rate policy.
  const rateless =
    options.concurrency !== undefined && options.limit === undefined && options.limits === undefined
  const policies = rateless ? [] : resolvePolicies(options)
  const onStoreError = checkStoreErrorMode(options.onStoreError ?? 'throw')
  const { store, clock, prefix, guard, undoLate, onDecision, report } = resolveStoreSettings(
    options,
    describeMode(onStoreError),
  )
  for (const policy of policies) {
    if (store.unsupportedAlgorithms?.includes(policy.algorithm)) {
      invalidOption('algorithm', policy.algorithm, `an algorithm ${storeName(store)} supports`)
    }
    store.checkPolicy?.(policy)
  }
  const pickPolicies = resolveThrottle(options.throttle, policies)
  const shadow = options.shadow ?? false
  if (typeof shadow !== 'boolean') invalidOption('shadow', shadow, 'a boolean')
  const refused = refusedKeysFor(options.topRefused, clock, guard, options.logger)
  const concurrency = concurrencyGate(options, store, clock, guard, shadow)
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
    observed: shadow || onDecision !== undefined || refused !== undefined,
    report,
    hard: options.throttle === undefined || options.throttle === 'hard',
    refused,
    concurrency,
  }
}

/** The `concurrency` limit's gate, over the store's slots; undefined without one. */
function concurrencyGate(
  options: LimiterOptions,
  store: Store,
  clock: Clock,
  guard: StoreProtection['guard'],
  shadow: boolean,
): ConcurrencyGate | undefined {
  const policy = resolveConcurrency(
    options.concurrency,
    guard === undefined ? undefined : (options.timeoutMs ?? 1000),
  )
  if (policy === undefined) return undefined
  if (shadow) invalidOption('shadow', shadow, 'false with `concurrency` (a slot is held or not)')
  if (store.slots === undefined) noSlots(store)
  return new ConcurrencyGate(policy, store.slots, guard, clock, options.logger ?? console)
}

/** The `topRefused` summary, named in the store's outage lines; undefined when off. */
function refusedKeysFor(
  option: unknown,
  clock: Clock,
  guard: StoreProtection['guard'],
  logger: StoreLogger | undefined,
): RefusedKeys | undefined {
  const settings = resolveTopRefused(option)
  if (settings === undefined) return undefined
  const refused = new RefusedKeys(settings, clock, logger ?? console)
  guard?.health.noteRefused(refused)
  return refused
}
