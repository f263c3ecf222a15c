/**
 * Owns resolving createLimiter's options, once: every check (a bad value throws a ConfigError
 * naming the option and the value) and default, into the LimiterSettings the limiter reads.
 */
import type { Clock } from '../clock'
import { declareOptions } from '../declared-options'
import { invalidOption } from '../errors'
import type { DecisionHook, DecisionReporter } from '../events'
import { LIMIT_OPTIONS, type LimiterOptions, type StoreErrorMode } from '../options'
import { resolvePolicies } from '../limit-list'
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

function checkShadow(shadow: unknown): void {
  if (typeof shadow !== 'boolean') invalidOption('shadow', shadow, 'a boolean')
}

/**
 * createLimiter's options, declared once. Values without a check here are checked with others:
 * limits by resolvePolicies, the store's by resolveStoreSettings, throttle, topRefused and
 * concurrency by their own resolvers.
 */
export const LIMITER_OPTIONS = declareOptions<LimiterOptions>('createLimiter', {
  ...LIMIT_OPTIONS.table,
  limits: { doc: 'several limits on every key, all-or-nothing; replaces `limit`/`window`' },
  store: { doc: 'where state lives; default: a new MemoryStore' },
  clock: { doc: 'source of time in ms; default: a turn clock (monotonic on in-process stores)' },
  throttle: { doc: 'hard, soft or elastic limits', default: 'hard' },
  onStoreError: {
    doc: 'what to do when the store fails',
    default: 'throw',
    check: checkStoreErrorMode,
    orNull: true,
  },
  timeoutMs: { doc: 'a slower store call counts as a failure', default: 1000 },
  prefix: { doc: 'prepended to every key in the store', default: '' },
  shadow: {
    doc: 'decide and report, never refuse',
    default: false,
    check: checkShadow,
    orNull: true,
  },
  onDecision: { doc: 'called with every decision (metrics plug in here)' },
  breaker: { doc: "the shared store's circuit breaker, or false" },
  maxInFlight: { doc: 'most calls out to the shared store at once', default: 5000 },
  logger: { doc: 'receives store outage lines; default: console' },
  topRefused: { doc: 'keeps the keys refused most', default: false },
  concurrency: { doc: 'requests of one key in flight at once' },
})

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
  const given = LIMITER_OPTIONS.resolve(options)
  // A concurrency-only limiter has no rate policy.
  const rateless =
    options.concurrency !== undefined && options.limit === undefined && options.limits === undefined
  const policies = rateless ? [] : resolvePolicies(options)
  const onStoreError = given.onStoreError!
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
  const shadow = given.shadow!
  const refused = refusedKeysFor(options.topRefused, clock, guard, options.logger)
  const concurrency = concurrencyGate(options, store, clock, guard, shadow)
  return Object.freeze({
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
  })
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
