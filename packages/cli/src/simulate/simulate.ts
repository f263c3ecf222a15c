/**
 * Owns `simulate`: a limiter run over a trace of requests on a fake clock, request by request.
 */
import {
  type LimiterOptions,
  type LimitOptions,
  type Policy,
  type PolicyOutcome,
  ConfigError,
} from '@sluice/core'
import {
  algorithmOf,
  newOutcome,
  combineOutcomes,
  declareOptions,
  LIMIT_OPTIONS,
  LIMITER_OPTIONS,
  resolvePolicies,
  invalidOption,
} from '@sluice/core/adapter'

/**
 * Most requests a simulation replays (about 100 MB with its results): time and memory grow with
 * the trace, so a trace is bounded rather than left to exhaust the process.
 */
export const MAX_TRACE_REQUESTS = 250_000
/**
 * Most numbers of state a simulation keeps, over all keys (32 MiB): sliding-log keeps one per
 * unit of `limit` per key, sliding-window one per sub-window.
 */
export const MAX_STATE_NUMBERS = 4 * 1024 * 1024

/** One request of a trace: when it arrives (ms), from whom, and how many units it takes. */
export interface TraceRequest {
  /** Arrival time in whole ms. */
  readonly at: number
  /** @default 'client' */
  readonly key?: string
  /** @default 1 */
  readonly cost?: number
}

/** Requests in any order; `simulate` replays them by arrival time. */
export type Trace = readonly TraceRequest[]

/** The limit options a simulation uses: no store, clock or throttle (the trace is the clock). */
export interface SimulateOptions extends Partial<LimitOptions> {
  /** Several limits on every key, all-or-nothing, as createLimiter's; replaces `limit`/`window`. @default undefined */
  limits?: LimiterOptions['limits']
}

/** What happened to one request of the trace. */
export interface SimulatedRequest {
  readonly at: number
  readonly key: string
  readonly cost: number
  readonly allowed: boolean
  /** As in `Decision`: whole units still allowed after this request. */
  readonly remaining: number
  /** As in `Decision`: 0 when allowed; else ms until a request of this cost could pass. */
  readonly retryAfterMs: number
  /** leaky-bucket shaping: how long the request is held (0 otherwise). */
  readonly delayMs: number
  /** When an admitted request is passed on (`at + delayMs`); undefined when rejected. */
  readonly departAt: number | undefined
}

export interface SimulationResult {
  /** The nominal policies, as `createLimiter` resolves them from the options. */
  readonly policies: readonly Policy[]
  /** One entry per trace request, in arrival order (ties keep the trace's order). */
  readonly requests: readonly SimulatedRequest[]
  readonly admitted: number
  readonly rejected: number
}

/**
 * simulate's options, declared once: a limit's (LimitOptions) and `limits`, as createLimiter
 * declares them; their values are checked together by resolvePolicies.
 */
export const SIMULATE_OPTIONS = declareOptions<SimulateOptions>('simulate', {
  ...LIMIT_OPTIONS.table,
  limits: LIMITER_OPTIONS.table.limits,
})

function checkRequest(request: TraceRequest, index: number): Required<TraceRequest> {
  const { at, key = 'client', cost = 1 } = request ?? {}
  if (typeof at !== 'number' || !Number.isSafeInteger(at) || at < 0)
    invalidOption(`trace[${index}].at`, at, 'a whole number of ms >= 0')
  if (typeof key !== 'string') invalidOption(`trace[${index}].key`, key, 'a string')
  if (typeof cost !== 'number' || !Number.isSafeInteger(cost) || cost < 1)
    invalidOption(`trace[${index}].cost`, cost, 'a positive integer')
  return { at, key, cost }
}

/** Refuses state past MAX_STATE_NUMBERS: `keys` rows of `width` numbers. */
function checkStateSize(width: number, keys: number): void {
  if (width * keys <= MAX_STATE_NUMBERS) return
  throw new ConfigError(
    keys === 1
      ? `the limits keep ${width} numbers of state per key (sliding-log one per unit of \`limit\`, sliding-window one per sub-window of \`precision\`); a simulation keeps at most ${MAX_STATE_NUMBERS}: lower \`limit\` or \`precision\``
      : `the trace's first ${keys} keys need ${width * keys} numbers of state (${width} per key); a simulation keeps at most ${MAX_STATE_NUMBERS}: use fewer keys or a lower \`limit\``,
  )
}

/**
 * Replays a trace through the limit the options describe and reports every request's fate.
 * It runs the same pure transitions the memory store runs (decide every policy, apply all or
 * none), synchronously and on private state, so a simulation leaves nothing behind (no store,
 * no timer) and the same trace always gives the same result. Bounded: at most
 * MAX_TRACE_REQUESTS requests and MAX_STATE_NUMBERS numbers of state (a ConfigError beyond).
 */
export function simulate(trace: Trace, options: SimulateOptions): SimulationResult {
  if (!Array.isArray(trace)) invalidOption('trace', trace, 'an array of { at, key?, cost? }')
  if (options === null || typeof options !== 'object')
    invalidOption('options', options, 'an object')
  SIMULATE_OPTIONS.resolve(options)
  if (trace.length > MAX_TRACE_REQUESTS) {
    throw new ConfigError(
      `\`trace\` must have at most ${MAX_TRACE_REQUESTS} requests; got ${trace.length}`,
    )
  }
  const policies = resolvePolicies(options)
  const steps = policies.map((policy) => ({ policy, algorithm: algorithmOf(policy) }))
  const width = steps.reduce((sum, step) => sum + step.algorithm.slots(step.policy), 0)
  const bases: number[] = []
  for (
    let i = 0, base = 0;
    i < steps.length;
    base += steps[i].algorithm.slots(steps[i].policy), i++
  )
    bases.push(base)

  // A stable sort by arrival: the algorithms assume time does not run backwards per key.
  const ordered = trace
    .map((request, index) => ({ request: checkRequest(request, index), index }))
    .sort((a, b) => a.request.at - b.request.at || a.index - b.index)

  const state = new Map<string, Float64Array>()
  const requests: SimulatedRequest[] = []
  let admitted = 0
  for (const { request } of ordered) {
    const { at, key, cost } = request
    let row = state.get(key)
    if (row === undefined) {
      checkStateSize(width, state.size + 1)
      row = new Float64Array(width)
      state.set(key, row)
    }
    const outcomes: PolicyOutcome[] = steps.map((step, i) => {
      const out = newOutcome(step.policy)
      step.algorithm.decide(row, bases[i], at, step.policy, cost, out)
      return out
    })
    const allowed = outcomes.every((outcome) => outcome.allowed)
    if (allowed) {
      steps.forEach((step, i) => step.algorithm.apply(row, bases[i], at, step.policy, cost))
      admitted++
    }
    const decision = combineOutcomes(policies, policies, outcomes, cost, at)
    requests.push({
      at,
      key,
      cost,
      allowed: decision.allowed,
      remaining: decision.remaining,
      retryAfterMs: decision.retryAfterMs,
      delayMs: decision.delayMs,
      departAt: decision.allowed ? at + decision.delayMs : undefined,
    })
  }
  return { policies, requests, admitted, rejected: requests.length - admitted }
}
