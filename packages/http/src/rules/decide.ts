/**
 * Owns deciding one request under a rule set: matching its descriptor entries, the one store
 * call for every matched rule (and the second, enforced-only call when only shadow rules said
 * no), what `onStoreError` answers when the store fails, and one event per rule and call.
 */
import {
  type Clock,
  badArgument,
  combineOutcomes,
  degradedDecision,
  toStoreError,
  type Decision,
  type DecisionReporter,
  type PolicyOutcome,
  prefixedKey,
  type StoreRequest,
  type WaitUntil,
} from '@sluice/core/web'
import type { DescriptorEntry, MatchedRule, RuleSet } from './compile'

/** What one request got from the rules it matched. */
export interface RulesDecision {
  /**
   * The enforced (non-shadow) rules' combined decision, as `createLimiter` would build it with
   * one policy per rule (each policy named after its rule). `undefined` when no enforced rule
   * matched: the request passes, and no headers are sent.
   */
  readonly decision: Decision | undefined
  /** Every limiting rule the request matched (unlimited rules end in no match). */
  readonly matches: readonly MatchedRule[]
  /** Shadow rules that would have rejected the request (it was not blocked for them). */
  readonly shadowRejected: readonly MatchedRule[]
  /** The rules whose counts this request took (for a refund); empty when nothing was taken. */
  readonly counted: readonly MatchedRule[]
  /** The group key of the store call: the domain, after the prefix when there is one (store/key-parts.ts). */
  readonly group: string
}

const NO_MATCHES: readonly MatchedRule[] = Object.freeze([])

/** What the decider needs of its limiter, resolved once. */
export interface RulesDeciderContext {
  readonly rules: () => RuleSet
  readonly prefix: string
  readonly clock: Clock
  /** The guarded store call: outcomes, or a StoreError; `waitUntil` is the consume's. */
  readonly call: (
    request: StoreRequest,
    waitUntil: WaitUntil | undefined,
  ) => Promise<readonly PolicyOutcome[]>
  readonly onStoreError: 'throw' | 'allow' | 'deny'
  /** Undefined without an `onDecision` hook: nothing is measured or built for events then. */
  readonly report: DecisionReporter | undefined
}

/** One store call's result: the outcomes, or undefined when the store failed and was answered for. */
interface Call {
  readonly now: number
  readonly outcomes: readonly PolicyOutcome[] | undefined
  readonly latencyMs: number
}

function checkEntries(entries: unknown): readonly DescriptorEntry[] {
  if (!Array.isArray(entries)) {
    badArgument('descriptors', entries, "an array of [key, value] entries, e.g. [['route', '/']]")
  }
  for (const entry of entries as unknown[]) {
    if (
      !Array.isArray(entry) ||
      typeof entry[0] !== 'string' ||
      (entry[1] !== undefined && typeof entry[1] !== 'string')
    ) {
      badArgument('descriptors[]', entry, 'a [key, value] pair of strings (value may be undefined)')
    }
  }
  return entries as readonly DescriptorEntry[]
}

/**
 * One event per rule of one store call. `outcomes[i]` is what `called[i]` decided; the
 * per-rule view is combineOutcomes' (a rule that would have admitted a request another
 * rejected reports what it has left without it, since the call took nothing).
 */
function reportCall(
  report: DecisionReporter,
  called: readonly MatchedRule[],
  outcomes: readonly PolicyOutcome[],
  cost: number,
  { now, latencyMs }: Call,
): void {
  const policies = called.map((m) => m.policy)
  const view = combineOutcomes(policies, policies, outcomes, cost, now).policies
  called.forEach((m, i) => {
    report(m.key, m.policy, view[i], m.shadow, cost, latencyMs, false, undefined)
  })
}

export function createRulesDecider(ctx: RulesDeciderContext) {
  const { clock, onStoreError, report } = ctx

  /**
   * Events for rules a failed store call was to decide: `onStoreError` decided for each of them
   * (`degraded`, as `degradedDecision` answers per policy), or, with 'throw', nothing was decided.
   */
  function reportFailure(
    called: readonly MatchedRule[],
    cost: number,
    now: number,
    latencyMs: number,
    error: unknown,
  ): void {
    const storeError = toStoreError(error)
    const view =
      onStoreError === 'throw'
        ? undefined
        : degradedDecision(
            called.map((m) => m.policy),
            onStoreError === 'allow',
            now,
          ).policies
    called.forEach((m, i) => {
      report!(m.key, m.policy, view?.[i], m.shadow, cost, latencyMs, view !== undefined, storeError)
    })
  }

  /** One store call counting `called` together; a failure is reported, then thrown or answered. */
  async function count(
    group: string,
    called: readonly MatchedRule[],
    cost: number,
    maxDelayMs: number,
    waitUntil: WaitUntil | undefined,
  ): Promise<Call> {
    const now = clock()
    const request: StoreRequest = {
      key: group,
      keys: called.map((m) => m.key),
      policies: called.map((m) => m.policy),
      cost,
      now,
      ...(maxDelayMs > 0 ? { maxDelayMs } : {}),
    }
    const started = report === undefined ? 0 : performance.now()
    try {
      const outcomes = await ctx.call(request, waitUntil)
      return { now, outcomes, latencyMs: report === undefined ? 0 : performance.now() - started }
    } catch (error) {
      if (report !== undefined) reportFailure(called, cost, now, performance.now() - started, error)
      if (onStoreError === 'throw') throw error
      return { now, outcomes: undefined, latencyMs: 0 }
    }
  }

  function combined(
    enforced: readonly MatchedRule[],
    outcomes: readonly PolicyOutcome[],
    cost: number,
    at: number,
  ): Decision {
    const policies = enforced.map((m) => m.policy)
    return combineOutcomes(policies, policies, outcomes, cost, at)
  }

  function degraded(enforced: readonly MatchedRule[], at: number): Decision | undefined {
    if (enforced.length === 0) return undefined
    return degradedDecision(
      enforced.map((m) => m.policy),
      onStoreError === 'allow',
      at,
    )
  }

  /**
   * Decides one request: each matched rule is enforced in ONE store call, all-or-nothing. When
   * only shadow rules would reject, the request is admitted and the enforced rules count it in a
   * second call (so a shadow rule never blocks, and a request it would reject takes nothing).
   * The second call goes only after the first was answered in time, so at most one times out:
   * `waitUntil` is handed one call's late work at most.
   */
  return async function decide(
    entries: readonly DescriptorEntry[],
    cost: number,
    maxDelayMs: number,
    waitUntil?: WaitUntil,
  ): Promise<RulesDecision> {
    const set = ctx.rules()
    const group = prefixedKey(ctx.prefix, set.domain)
    const matches = set.match(checkEntries(entries))
    const none = { matches, shadowRejected: NO_MATCHES, counted: NO_MATCHES, group }
    if (matches.length === 0) return { decision: undefined, ...none }
    const enforced = matches.filter((m) => !m.shadow)
    const first = await count(group, matches, cost, maxDelayMs, waitUntil)
    const outcomes = first.outcomes
    if (outcomes === undefined) return { decision: degraded(enforced, first.now), ...none }
    const shadowRejected = matches.filter((m, i) => m.shadow && !outcomes[i].allowed)
    const enforcedOutcomes = outcomes.filter((_o, i) => !matches[i].shadow)
    const enforcedRejected = enforcedOutcomes.some((o) => !o.allowed)
    if (enforcedRejected || shadowRejected.length === 0 || enforced.length === 0) {
      // One call decided it all: admitted by every rule, rejected by an enforced one (nothing
      // taken), or only shadow rules matched (nothing to enforce, nothing else to count).
      if (report !== undefined) reportCall(report, matches, outcomes, cost, first)
      const admitted = !enforcedRejected && shadowRejected.length === 0
      return {
        decision:
          enforced.length === 0 ? undefined : combined(enforced, enforcedOutcomes, cost, first.now),
        matches,
        shadowRejected,
        counted: admitted ? matches : NO_MATCHES,
        group,
      }
    }
    // Only shadow rules said no: the request goes on, so the enforced rules count it alone.
    // The shadow rules are reported from the first call, the enforced ones from the second.
    if (report !== undefined) {
      const shadowOutcomes = outcomes.filter((_o, i) => matches[i].shadow)
      reportCall(
        report,
        matches.filter((m) => m.shadow),
        shadowOutcomes,
        cost,
        first,
      )
    }
    const second = await count(group, enforced, cost, maxDelayMs, waitUntil)
    if (second.outcomes === undefined) {
      return { ...none, decision: degraded(enforced, second.now), shadowRejected }
    }
    if (report !== undefined) reportCall(report, enforced, second.outcomes, cost, second)
    const decision = combined(enforced, second.outcomes, cost, second.now)
    return {
      decision,
      matches,
      shadowRejected,
      counted: decision.allowed ? enforced : NO_MATCHES,
      group,
    }
  }
}
