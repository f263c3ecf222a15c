import { turnClock, type Clock } from './clock'
import { isPromise } from './promise'
import { Verdict, type Decision, type PolicyDecision } from './decision'
import { ConfigError, describeValue, invalidOption, SluiceError, StoreError } from './errors'
import { createDecisionReporter, type DecisionHook, type DecisionReporter } from './events'
import {
  checkKnownOptions,
  resolvePolicies,
  type ConsumeOptions,
  type LimiterOptions,
  type StoreErrorMode,
} from './options'
import { METER_ALGORITHMS, type Policy, type PolicyOutcome } from './policy'
import { MemoryStore } from './store/memory-store'
import type { Store, StoreRequest, StoreResult } from './store/types'
import { resolveThrottle } from './throttle'
import { boundedStoreCall, toStoreError } from './store-call/bounded'
import { protectStore } from './store-call/guard'

export { boundedStoreCall, toStoreError }

export interface WaitOptions {
  /** Units to take. @default 1 */
  cost?: number
  /**
   * The longest the caller will wait: a request whose slot is further away resolves as rejected
   * (`allowed: false`) at once, taking nothing. @default the longest window of the limiter's policies
   */
  maxWaitMs?: number
  /** Aborting gives the reserved slot back and rejects the wait with the signal's reason. @default undefined */
  signal?: AbortSignal
}

export interface RefundOptions {
  /** Units to give back. @default 1 */
  cost?: number
  /** When the refunded request was consumed (ms on the limiter's clock). @default now */
  at?: number
}

/** Limits keys against its policies through its store. */
export interface Limiter {
  /** Decides one request of `cost` (default 1) and, when admitted, counts it. */
  consume(key: string, options?: ConsumeOptions): Promise<Decision>
  /** What a request would see now (`remaining` is what is left), counting nothing. Same as `get`. */
  peek(key: string): Promise<Decision>
  /** The key's state without consuming: what a request would see now (`remaining` is what is left). */
  get(key: string): Promise<Decision>
  /**
   * Refuses the key for `ms` whatever its counters say (kept apart from them, so consumes do not
   * overwrite it); a later block replaces an earlier one; `reset` lifts it.
   */
  block(key: string, ms: number): Promise<void>
  /** Takes `cost` units from every policy whatever the limit says, never beyond full. */
  penalize(key: string, cost?: number): Promise<void>
  /** Gives `cost` units back to every policy, from the newest usage, never below empty. */
  reward(key: string, cost?: number): Promise<void>
  /**
   * Reserves the next slot in one store call and resolves with the Decision once the caller may
   * go (after its `delayMs`). A slot further away than `maxWaitMs` resolves as rejected at once,
   * taking nothing; an aborted `signal` gives the slot back and rejects. Meter algorithms only
   * (token-bucket, leaky-bucket, gcra): a limiter with a counter policy throws a ConfigError.
   */
  wait(key: string, options?: WaitOptions): Promise<Decision>
  /** Gives back units an admitted request took (e.g. skipSuccessfulRequests); nothing into a reset window. */
  refund(key: string, options?: RefundOptions): Promise<void>
  /** Forgets the key's state under every policy. */
  reset(key: string): Promise<void>
  /** The nominal policies, in the order given. */
  readonly policies: readonly Policy[]
  readonly store: Store
  readonly clock: Clock
}

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

/** Retry-After suggested by `onStoreError: 'deny'`: short, so clients come back when the store may be. */
const DENY_RETRY_MS = 1000

export function checkStore(store: unknown): Store {
  const candidate = store as Partial<Store> | null
  if (
    typeof candidate !== 'object' ||
    candidate === null ||
    typeof candidate.consume !== 'function' ||
    typeof candidate.peek !== 'function' ||
    typeof candidate.reset !== 'function' ||
    typeof candidate.refund !== 'function'
  ) {
    invalidOption('store', store, 'a Store (an object with consume, peek, refund and reset)')
  }
  return store as Store
}

export function checkStoreErrorMode(mode: unknown): StoreErrorMode {
  if (mode === 'throw' || mode === 'allow' || mode === 'deny') return mode
  if (
    typeof mode === 'object' &&
    mode !== null &&
    typeof (mode as { consume?: unknown }).consume === 'function'
  ) {
    return mode as StoreErrorMode
  }
  return invalidOption('onStoreError', mode, "'throw', 'allow', 'deny' or a fallback Limiter")
}

/** onStoreError as the outage log line names it. */
export function describeMode(mode: StoreErrorMode): string {
  return typeof mode === 'string' ? `'${mode}'` : 'a fallback limiter'
}

/** Index of the policy that decides: the longest wait when rejected, else the fewest remaining. */
function bindingIndex(outcomes: readonly PolicyOutcome[], allowed: boolean): number {
  let best = 0
  for (let i = 1; i < outcomes.length; i++) {
    const o = outcomes[i]
    const b = outcomes[best]
    if (allowed) {
      if (o.remaining < b.remaining || (o.remaining === b.remaining && o.resetMs > b.resetMs))
        best = i
    } else if (!o.allowed && (b.allowed || o.retryAfterMs > b.retryAfterMs)) {
      best = i
    }
  }
  return best
}

/** Capacity of a policy as its outcome's `remaining` counts it. */
function capacity(policy: Policy): number {
  return policy.burst
}

/**
 * Builds the Decision from the store's outcomes. `applied` are the (possibly scaled) policies
 * the store used; `nominal` the ones headers announce: `remaining` is reported against the
 * nominal capacity, so a soft or elastic allowance never shows as extra quota.
 */
export function combineOutcomes(
  nominal: readonly Policy[],
  applied: readonly Policy[],
  outcomes: readonly PolicyOutcome[],
  cost: number,
  at: number,
): Decision {
  if (outcomes.length === 1 && applied === nominal)
    return singleDecision(nominal[0], outcomes[0], at)
  let allowed = true
  let delayMs = 0
  for (const outcome of outcomes) if (!outcome.allowed) allowed = false
  const policies: PolicyDecision[] = new Array(outcomes.length)
  for (let i = 0; i < outcomes.length; i++) {
    const o = outcomes[i]
    const policy = nominal[i]
    const allowance = capacity(applied[i]) - capacity(policy)
    // A policy that would have admitted a request another rejected took nothing from it.
    const left = !allowed && o.allowed ? o.remaining + cost : o.remaining
    const remaining = allowance > 0 ? Math.max(0, left - allowance) : left
    if (o.delayMs > delayMs) delayMs = o.delayMs
    policies[i] = {
      policy,
      allowed: o.allowed,
      remaining,
      resetMs: o.resetMs,
      retryAfterMs: o.retryAfterMs,
      delayMs: o.delayMs,
    }
  }
  const binding = policies[bindingIndex(policies, allowed)]
  return {
    allowed,
    limit: binding.policy.limit,
    remaining: binding.remaining,
    resetMs: binding.resetMs,
    retryAfterMs: allowed ? 0 : binding.retryAfterMs,
    delayMs: allowed ? delayMs : 0,
    policy: binding.policy,
    policies,
    degraded: false,
    at,
  }
}

/** The common case, one policy at its nominal limit: the store's outcome serves as the PolicyDecision. */
function singleDecision(policy: Policy, outcome: PolicyOutcome, at: number): Decision {
  if (outcome instanceof Verdict && outcome.policy === policy) {
    outcome.at = at
    return outcome
  }
  const verdict = new Verdict(policy)
  verdict.at = at
  verdict.allowed = outcome.allowed
  verdict.remaining = outcome.remaining
  verdict.resetMs = outcome.resetMs
  verdict.retryAfterMs = outcome.retryAfterMs
  verdict.delayMs = outcome.delayMs
  return verdict
}

/** A decision made without the store (`onStoreError: 'allow' | 'deny'`). */
export function degradedDecision(
  policies: readonly Policy[],
  allowed: boolean,
  at: number,
): Decision {
  const policy = policies[0]
  const retryAfterMs = allowed ? 0 : DENY_RETRY_MS
  const remaining = allowed ? policy.limit : 0
  return {
    allowed,
    limit: policy.limit,
    remaining,
    resetMs: retryAfterMs,
    retryAfterMs,
    delayMs: 0,
    policy,
    policies: policies.map((p) => ({
      policy: p,
      allowed,
      remaining: allowed ? p.limit : 0,
      resetMs: retryAfterMs,
      retryAfterMs,
      delayMs: 0,
    })),
    degraded: true,
    at,
  }
}

/** The decision a shadow limiter returns: it admits, and `shadow` keeps what enforcing would have said. */
function shadowDecision(decision: Decision): Decision {
  return {
    allowed: true,
    limit: decision.limit,
    remaining: decision.remaining,
    resetMs: decision.resetMs,
    retryAfterMs: 0,
    delayMs: 0,
    policy: decision.policy,
    // Read explicitly: a Verdict derives `policies` through a getter, which a spread would drop.
    policies: decision.policies,
    degraded: decision.degraded,
    at: decision.at,
    shadow: {
      allowed: decision.allowed,
      retryAfterMs: decision.retryAfterMs,
      delayMs: decision.delayMs,
    },
  }
}

export function checkCost(cost: unknown): number {
  if (typeof cost !== 'number' || !Number.isSafeInteger(cost) || cost < 1) {
    throw new SluiceError(
      'ERR_SLUICE_ARGUMENT',
      `\`cost\` must be a positive integer; got ${describeValue(cost)}`,
    )
  }
  return cost
}

/** Throws a SluiceError (ERR_SLUICE_ARGUMENT) naming the argument and the value. */
export function badArgument(name: string, value: unknown, expected: string): never {
  throw new SluiceError(
    'ERR_SLUICE_ARGUMENT',
    `\`${name}\` must be ${expected}; got ${describeValue(value)}`,
  )
}

export function checkMs(value: unknown, name: string, allowZero: boolean): number {
  if (
    typeof value !== 'number' ||
    !Number.isFinite(value) ||
    value < 0 ||
    (!allowZero && value === 0)
  ) {
    badArgument(
      name,
      value,
      allowZero ? 'a finite number of ms >= 0' : 'a positive finite number of ms',
    )
  }
  return value
}

/** The error an aborted wait rejects with when its signal carries no reason of its own. */
export function abortError(): SluiceError {
  const error = new SluiceError('ERR_SLUICE_ABORTED', 'the wait was aborted (AbortError)')
  error.name = 'AbortError'
  return error
}

/**
 * What an aborted wait rejects with: the reason given to `abort(reason)`, or, for a bare
 * `abort()` (whose reason is the platform's DOMException), a SluiceError named AbortError.
 */
export function abortReason(signal: AbortSignal): unknown {
  const reason: unknown = signal.reason
  if (reason === undefined || (reason instanceof DOMException && reason.name === 'AbortError')) {
    const error = abortError()
    if (reason !== undefined) (error as { cause?: unknown }).cause = reason
    return error
  }
  return reason
}

function checkKey(key: unknown): string {
  if (typeof key !== 'string') {
    throw new SluiceError(
      'ERR_SLUICE_ARGUMENT',
      `\`key\` must be a string; got ${describeValue(key)}`,
    )
  }
  return key
}

/**
 * Creates a limiter. Every option is checked here, once: a bad value throws a ConfigError that
 * names the option and the value.
 */
export function createLimiter(options: LimiterOptions): Limiter {
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
  const timeoutMs = options.timeoutMs ?? 1000
  if (typeof timeoutMs !== 'number' || !Number.isFinite(timeoutMs) || timeoutMs <= 0) {
    invalidOption('timeoutMs', timeoutMs, 'a positive number of ms')
  }
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
  // Checked once per decision: without shadow mode and a hook the paths below are unchanged.
  const observed = shadow || onDecision !== undefined
  const report = onDecision === undefined ? undefined : createDecisionReporter(onDecision)

  function bounded<T>(call: () => Promise<T>): Promise<T> {
    return boundedStoreCall(call, guard)
  }

  async function answerStoreError(error: unknown, key: string, cost: number): Promise<Decision> {
    const storeError = toStoreError(error)
    guard?.health.answeredWithoutStore()
    if (onStoreError === 'throw') throw storeError
    if (onStoreError === 'allow') return degradedDecision(policies, true, clock())
    if (onStoreError === 'deny') return degradedDecision(policies, false, clock())
    const decision = await onStoreError.consume(key, { cost })
    return { ...decision, degraded: true }
  }

  /** Reports one decision to the hook; a failing hook is reported once and never changes the decision. */
  function emit(
    key: string,
    cost: number,
    decision: Decision | undefined,
    storeLatencyMs: number,
    storeError: StoreError | undefined,
  ): void {
    ;(report as DecisionReporter)(
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

  /** Shadow mode and the hook, applied to a decision the store (or onStoreError) made. */
  function observe(
    key: string,
    cost: number,
    decision: Decision,
    storeLatencyMs: number,
    storeError: StoreError | undefined,
  ): Decision {
    if (onDecision !== undefined) emit(key, cost, decision, storeLatencyMs, storeError)
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

  function storeKey(key: string): string {
    checkKey(key)
    return prefix === '' ? key : prefix + key
  }

  /** Not async: a promise chain costs one promise and one async frame fewer per decision. */
  function decide(key: string, cost: number, look: boolean, maxDelayMs = 0): Promise<Decision> {
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
      ? bounded(() => store.peek(request))
      : boundedStoreCall(
          () => store.consume(request),
          guard,
          undoLate === undefined ? undefined : (result) => undoLate(request, result),
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

  /** A store method the contract added later; a custom store without it gets a clear error. */
  function supported<M extends 'block' | 'penalize'>(method: M): NonNullable<Store[M]> {
    const fn = store[method] as Store[M] | undefined
    if (typeof fn !== 'function') {
      throw new SluiceError(
        'ERR_SLUICE_UNSUPPORTED',
        `${store.constructor.name} does not implement \`${method}\``,
      )
    }
    return fn.bind(store) as NonNullable<Store[M]>
  }

  // wait() reserves a slot ahead of time, which only the meters (a debt that drains) can express.
  const counterPolicy = policies.find((policy) => !METER_ALGORITHMS.has(policy.algorithm))
  const longestWindow = policies.reduce((ms, policy) => Math.max(ms, policy.windowMs), 0)

  /** Validates synchronously (throws), then reserves, holds and settles the slot. */
  function wait(key: string, waitOptions: WaitOptions | undefined): Promise<Decision> {
    checkKey(key)
    if (waitOptions !== undefined && (typeof waitOptions !== 'object' || waitOptions === null)) {
      badArgument('options', waitOptions, 'an object { cost, maxWaitMs, signal }')
    }
    if (counterPolicy !== undefined) {
      throw new ConfigError(
        `\`wait\` needs a meter algorithm (token-bucket, leaky-bucket or gcra) to reserve a slot; policy ${JSON.stringify(counterPolicy.name)} uses ${JSON.stringify(counterPolicy.algorithm)}`,
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
    if (signal?.aborted) return Promise.reject(abortReason(signal))
    // A shadow limiter never holds anyone: it decides (and reports) as consume does.
    if (shadow) return decide(key, cost, false)
    return decide(key, cost, false, maxWaitMs).then((decision) => {
      if (!decision.allowed || decision.delayMs <= 0) return decision
      if (signal?.aborted) return giveBack(key, cost, decision, signal)
      return new Promise<Decision>((resolve, reject) => {
        // Not unref'd: a caller waiting for its slot keeps the process alive, as any timer would.
        const timer = setTimeout(() => {
          signal?.removeEventListener('abort', onAbort)
          resolve(decision)
        }, decision.delayMs)
        function onAbort(): void {
          clearTimeout(timer)
          giveBack(key, cost, decision, signal!).then(resolve, reject)
        }
        signal?.addEventListener('abort', onAbort, { once: true })
      })
    })
  }

  /** An aborted wait: refunds the reserved slot, then rejects with the signal's reason. */
  async function giveBack(
    key: string,
    cost: number,
    decision: Decision,
    signal: AbortSignal,
  ): Promise<never> {
    if (!decision.degraded) {
      await bounded(() =>
        store.refund({
          key: storeKey(key),
          policies: pickPolicies(),
          cost,
          now: clock(),
          at: decision.at,
        }),
      )
    }
    throw abortReason(signal)
  }

  const consumeNow = store.consumeNow?.bind(store)
  /** The embedded store, called directly for a single limit (no request object, no array). */
  const memoryStore = store instanceof MemoryStore ? store : undefined
  const syncRequest: { key: string; policies: readonly Policy[]; cost: number; now: number } = {
    key: '',
    policies,
    cost: 1,
    now: 0,
  }

  /**
   * The commonest configuration, one hard limit on the embedded store with no hook and no
   * shadow: the store's Verdict is the whole decision. Its own small function, so that V8
   * inlines the store's decision into it.
   */
  const plain =
    memoryStore !== undefined &&
    policies.length === 1 &&
    !observed &&
    (options.throttle === undefined || options.throttle === 'hard')
  const onlyPolicy = policies[0]

  function decidePlain(key: string, cost: number): Decision | Promise<Decision> {
    if (typeof key !== 'string') return decide(key, cost, false) // reports the bad key
    try {
      const now = clock()
      return (memoryStore as MemoryStore).consumeOneNow(
        prefix === '' ? key : prefix + key,
        onlyPolicy,
        cost,
        now,
        0,
      )
    } catch (error) {
      return answerStoreError(error, key, cost)
    }
  }

  /**
   * The hot path for in-process stores: no timer, no async frame, and no promise unless the store
   * failed (onStoreError answers asynchronously).
   */
  function decideSync(key: string, cost: number): Decision | Promise<Decision> {
    if (typeof key !== 'string') return decide(key, cost, false) // reports the bad key
    const applied = pickPolicies()
    const started = onDecision === undefined ? 0 : performance.now()
    let decision: Decision
    try {
      const now = clock()
      const storeKey = prefix === '' ? key : prefix + key
      if (memoryStore !== undefined && applied === policies && policies.length === 1) {
        // The store's Verdict, made at `now`, is the whole decision of a single policy.
        decision = memoryStore.consumeOneNow(storeKey, policies[0], cost, now, 0)
      } else {
        // consumeNow runs to completion before anything else can call it: one request object serves.
        syncRequest.key = storeKey
        syncRequest.policies = applied
        syncRequest.cost = cost
        syncRequest.now = now
        const outcomes = (consumeNow as NonNullable<typeof consumeNow>)(syncRequest)
        decision = combineOutcomes(policies, applied, outcomes, cost, now)
      }
    } catch (error) {
      if (!observed) return answerStoreError(error, key, cost)
      const latency = onDecision === undefined ? 0 : performance.now() - started
      return observeStoreError(error, key, cost, latency)
    }
    if (!observed) return decision
    const latency = onDecision === undefined ? 0 : performance.now() - started
    return observe(key, cost, decision, latency, undefined)
  }

  /**
   * What a consume decides, chosen once: V8 inlines a hot path only while the code it inlines
   * stays small, so the plain configuration gets a path of its own, not a branch in a larger one.
   */
  const decideNow: DirectConsume = plain ? decidePlain : decideSync

  /** decideNow as a promise: what `consume` returns. */
  function decideNowAsPromise(key: string, cost: number): Promise<Decision> {
    const decision = decideNow(key, cost)
    return isPromise(decision) ? decision : Promise.resolve(decision)
  }

  /** A consume through the store's promise: decide's, named for the two callers below. */
  function decideRemote(key: string, cost: number): Promise<Decision> {
    return decide(key, cost, false)
  }

  /** A consume of a checked cost: synchronous for an in-process store, else through decide. */
  const consumeCost: (key: string, cost: number) => Promise<Decision> =
    consumeNow === undefined ? decideRemote : decideNowAsPromise

  /** consume(key, options): checks the cost, then decides as consume(key) does. */
  function consumeWithOptions(key: string, consumeOptions: ConsumeOptions): Promise<Decision> {
    let cost = 1
    try {
      if (consumeOptions?.cost !== undefined) cost = checkCost(consumeOptions.cost)
    } catch (error) {
      return Promise.reject(error)
    }
    return consumeCost(key, cost)
  }

  /** `get` and its alias `peek`: what a request would see now, counting nothing. */
  function lookAt(key: string): Promise<Decision> {
    return decide(key, 0, true)
  }

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
    async block(key, ms) {
      const k = storeKey(key)
      checkMs(ms, 'ms', false)
      const now = clock()
      const block = supported('block')
      await bounded(() => block({ key: k, until: now + ms, now }))
    },
    async penalize(key, cost = 1) {
      const k = storeKey(key)
      checkCost(cost)
      const penalize = supported('penalize')
      await bounded(() => penalize({ key: k, policies: pickPolicies(), cost, now: clock() }))
    },
    async reward(key, cost = 1) {
      const k = storeKey(key)
      checkCost(cost)
      await bounded(() => store.refund({ key: k, policies: pickPolicies(), cost, now: clock() }))
    },
    wait(key, waitOptions) {
      try {
        return wait(key, waitOptions)
      } catch (error) {
        return Promise.reject(error)
      }
    },
    async refund(key, refundOptions) {
      const cost = refundOptions?.cost === undefined ? 1 : checkCost(refundOptions.cost)
      const now = clock()
      const at = refundOptions?.at ?? now
      await bounded(() =>
        store.refund({ key: storeKey(key), policies: pickPolicies(), cost, now, at }),
      )
    },
    async reset(key) {
      await bounded(() => store.reset(storeKey(key), policies))
    },
  }
  const consumeDirect = consumeNow === undefined ? decideRemote : decideNow
  directConsumers.set(limiter, (key, cost) => {
    try {
      checkCost(cost)
    } catch (error) {
      return Promise.reject(error)
    }
    return consumeDirect(key, cost)
  })
  return limiter
}

/** What `consume(key, { cost })` decides: at once when the store is in-process, else its promise. */
export type DirectConsume = (key: string, cost: number) => Decision | Promise<Decision>

const directConsumers = new WeakMap<Limiter, DirectConsume>()

/**
 * Internal (the HTTP pipeline's hot path): the limiter's `consume` of a checked cost, without
 * the promise for a limiter over an in-process store (`consumeNow`), and for any other store the
 * store call's own promise chain, with no wrapper around it. Same decision, same events, same
 * errors: a failure still answers with a promise (rejected or onStoreError's).
 */
export function directConsumer(limiter: Limiter): DirectConsume | undefined {
  return directConsumers.get(limiter)
}
