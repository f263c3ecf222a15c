/**
 * Owns createRulesLimiter: a limiter over a rule set (its options, sources and waits; deciding
 * one request is rules/decide.ts).
 */
import {
  type Clock,
  abortReason,
  boundedStoreCall,
  checkCost,
  checkMs,
  checkWaitUntil,
  describeMode,
  resolveStoreSettings,
  type BreakerOptions,
  invalidOption,
  StoreError,
  type DecisionHook,
  checkOneOf,
  declareOptions,
  LIMITER_OPTIONS,
  type PolicyOutcome,
  type Store,
  type StoreRequest,
  type WaitUntil,
  holdFor,
} from '@sluice/core/web'
import type { DescriptorEntry, RuleSet } from './compile'
import type { RulesDocument } from './document'
import { createRulesDecider, type RulesDecision } from './decide'
import type { RulesLogger, RulesWatcher } from './watcher'

export type { RulesDecision } from './decide'

/**
 * Where rules come from: a file path (loaded now, then watched and hot-reloaded), a parsed
 * rules document, a RuleSet from `loadRules`, or a RulesWatcher from `watchRules` (its current
 * set is read once per request).
 */
export type RulesSource = string | RulesDocument | RuleSet | RulesWatcher

export interface RulesLimiterOptions {
  /** The rules; see RulesSource. */
  rules: RulesSource
  /** Where counts live. @default new MemoryStore() */
  store?: Store
  /** @default () => Date.now() */
  clock?: Clock
  /** Prepended to the group key (the rules' domain). @default '' */
  prefix?: string
  /** A store failure: `'throw'`, or decide without it (`'allow'` / `'deny'`). @default 'throw' */
  onStoreError?: 'throw' | 'allow' | 'deny'
  /** A store call slower than this counts as a failure. @default 1000 */
  timeoutMs?: number
  /** The shared store's circuit breaker, as createLimiter's. @default { failures: 5, coolOffMs: 1000 } */
  breaker?: BreakerOptions | false
  /** Most calls out to the shared store at once, as createLimiter's. @default 5000 */
  maxInFlight?: number
  /** Hot reload news when `rules` is a file path (invalid versions: warn), and store outages. @default console */
  logger?: RulesLogger
  /**
   * Called with one DecisionEvent per matched rule per decided request (key: the rule's state
   * key; policy: the rule's name; shadow: the rule is a shadow rule; allowed: what that rule's
   * limit said). Pass `prometheusMetrics()` to count per rule. See docs/observability.md.
   * @default undefined
   */
  onDecision?: DecisionHook
}

export interface RulesConsumeOptions {
  /** Units to take. @default 1 */
  cost?: number
  /**
   * Keeps a timed-out store call's late reply and its refund running where the runtime cancels
   * I/O pending after the response (Cloudflare Workers' `ctx.waitUntil`): see core's
   * ConsumeOptions.waitUntil.
   * @default undefined
   */
  waitUntil?: WaitUntil
}

export interface RulesWaitOptions extends RulesConsumeOptions {
  /**
   * The longest the request may be held for its slot; beyond it the request is rejected at
   * once, taking nothing. Only meter rules (token-bucket, leaky-bucket, gcra) can reserve a
   * slot; counter rules decide as `consume` does.
   */
  maxWaitMs: number
  /** Aborting while held gives the slot back and rejects with the signal's reason. */
  signal?: AbortSignal
}

/** Enforces every rule a request matches in one all-or-nothing store call. */
export interface RulesLimiter {
  /** The rules in force now (a hot reload swaps them between requests). */
  readonly rules: RuleSet
  readonly store: Store
  readonly clock: Clock
  /** Decides one request described by `entries`, counting it under every matched rule at once. */
  consume(
    entries: readonly DescriptorEntry[],
    options?: RulesConsumeOptions,
  ): Promise<RulesDecision>
  /** As `consume`, but a request that does not fit now is held for its reserved slot (limiter.wait). */
  wait(entries: readonly DescriptorEntry[], options: RulesWaitOptions): Promise<RulesDecision>
  /** Gives back what a decision took (skipSuccessfulRequests and the like). */
  refund(result: RulesDecision, options?: { cost?: number; at?: number }): Promise<void>
  /** Stops watching the rules file when this limiter opened the watcher. */
  close(): void
}

const limiter = LIMITER_OPTIONS.table

const RULES_STORE_ERROR_MODES = ['throw', 'allow', 'deny'] as const

/**
 * createRulesLimiter's options, declared once: the store's share createLimiter's declaration;
 * `rules` is checked by resolveRules, the store's by resolveStoreSettings.
 */
export const RULES_LIMITER_OPTIONS = declareOptions<RulesLimiterOptions>('createRulesLimiter', {
  rules: { doc: 'the rules: a file path, a rules document, a RuleSet or a RulesWatcher' },
  store: limiter.store,
  clock: limiter.clock,
  prefix: limiter.prefix,
  onStoreError: {
    doc: "what to do when the store fails: 'throw', 'allow' or 'deny'",
    default: 'throw',
    check: (mode, name) => checkOneOf(mode, name, RULES_STORE_ERROR_MODES),
    orNull: true,
  },
  timeoutMs: limiter.timeoutMs,
  breaker: limiter.breaker,
  maxInFlight: limiter.maxInFlight,
  logger: { doc: 'receives rules reload news and store outage lines; default: console' },
  onDecision: limiter.onDecision,
})

function isRuleSet(value: object): value is RuleSet {
  return typeof (value as Partial<RuleSet>).match === 'function'
}

function isWatcher(value: object): value is RulesWatcher {
  return typeof (value as Partial<RulesWatcher>).reload === 'function' && 'rules' in value
}

/** A rule set in force, read per request, and what closing it does. */
export interface OpenRules {
  current: () => RuleSet
  close: () => void
}

/**
 * Opens the sources the limiter cannot take as they are: a file path (read, then watched) and a
 * rules document (validated and compiled). On Node that is rules/open.ts; the web build's
 * opener refuses them (no file system, and the schema loads through node:module).
 */
export type RulesOpener = (
  source: string | RulesDocument,
  logger: RulesLogger | undefined,
  option: string,
) => OpenRules

/** Resolves a RulesSource once: a function returning the set in force, and what closing does. */
export function resolveRules(
  source: unknown,
  logger: RulesLogger | undefined,
  open: RulesOpener,
  option = 'rules',
): OpenRules {
  if (typeof source === 'string') return open(source, logger, option)
  if (typeof source !== 'object' || source === null) {
    invalidOption(option, source, 'a rules file path, a rules object, a RuleSet or a RulesWatcher')
  }
  if (isWatcher(source)) return { current: () => source.rules, close: () => {} }
  if (isRuleSet(source)) return { current: () => source, close: () => {} }
  return open(source as RulesDocument, logger, option)
}

/**
 * A limiter over a rule set: each request's matched rules are enforced together in ONE store
 * call (group key = the domain, `keys[i]` = each rule's state key), all-or-nothing. Shadow rules
 * are decided in the same call; when only shadow rules would reject, the request is admitted and
 * the enforced rules are counted by a second call (so a shadow rule never blocks, and, as when
 * enforcing, a request it would reject takes nothing from it).
 */
export function createRulesLimiterWith(
  options: RulesLimiterOptions,
  open: RulesOpener,
): RulesLimiter {
  if (options === null || typeof options !== 'object')
    invalidOption('options', options, 'an object')
  const given = RULES_LIMITER_OPTIONS.resolve(options)
  const onStoreError = given.onStoreError!
  const { store, clock, prefix, guard, undoLate, report } = resolveStoreSettings(
    options,
    describeMode(onStoreError),
  )
  const rules = resolveRules(options.rules, options.logger, open)

  function call(
    request: StoreRequest,
    waitUntil: WaitUntil | undefined,
  ): Promise<readonly PolicyOutcome[]> {
    return boundedStoreCall(
      () => store.consume(request),
      guard,
      undoLate === undefined ? undefined : (result) => undoLate(request, result),
      false,
      waitUntil,
    ).then(
      (result) => result.outcomes,
      (error: unknown) => {
        guard?.health.answeredWithoutStore()
        throw error
      },
    )
  }

  const decide = createRulesDecider({
    rules: rules.current,
    prefix,
    clock,
    call,
    onStoreError,
    report,
  })

  async function refund(
    result: RulesDecision,
    refundOptions: { cost?: number; at?: number } = {},
  ): Promise<void> {
    if (result.counted.length === 0) return
    const cost = refundOptions.cost === undefined ? 1 : checkCost(refundOptions.cost)
    const now = clock()
    await boundedStoreCall(
      () =>
        store.refund({
          key: result.group,
          keys: result.counted.map((m) => m.key),
          policies: result.counted.map((m) => m.policy),
          cost,
          now,
          at: refundOptions.at ?? result.decision?.at ?? now,
        }),
      guard,
    )
  }

  function costOf(value: unknown): number {
    return value === undefined ? 1 : checkCost(value)
  }

  return {
    get rules() {
      return rules.current()
    },
    store,
    clock,
    consume(entries, consumeOptions) {
      try {
        return decide(
          entries,
          costOf(consumeOptions?.cost),
          0,
          checkWaitUntil(consumeOptions?.waitUntil),
        )
      } catch (error) {
        return Promise.reject(error)
      }
    },
    async wait(entries, waitOptions) {
      const cost = costOf(waitOptions?.cost)
      const maxWaitMs = checkMs(waitOptions?.maxWaitMs, 'maxWaitMs', true)
      const signal = waitOptions.signal
      if (signal?.aborted) throw abortReason(signal)
      const result = await decide(entries, cost, maxWaitMs, checkWaitUntil(waitOptions.waitUntil))
      const decision = result.decision
      if (decision === undefined || !decision.allowed || decision.delayMs <= 0) return result
      const giveBack = async (): Promise<never> => {
        try {
          await refund(result, { cost, at: decision.at })
        } catch (error) {
          throw new StoreError('giving back an aborted wait failed', { cause: error })
        }
        throw abortReason(signal!)
      }
      if (signal?.aborted) return giveBack()
      return holdFor(decision.delayMs, result, signal, giveBack)
    },
    refund,
    close: rules.close,
  }
}
