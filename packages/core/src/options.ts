/**
 * Owns createLimiter's option types and turning limit options into policies.
 */
import type { TopRefusedOptions } from './metrics/top-refused'
import type { ConcurrencyLimit } from './concurrency/policy'
import type { BreakerOptions, StoreLogger } from './store-call/health'
import type { Clock } from './clock'
import type { Decision } from './decision'
import type { DecisionHook } from './events'
import type { Duration } from './duration'
import type { AlgorithmName, WindowAnchor } from './policy'
import {
  DEFAULT_ALGORITHM,
  type AlgorithmOption,
  listNames,
  namesTaking,
  REGISTRY,
  ROWS,
} from './algorithms/registry'
import type { WaitUntil } from './store-call/wait-until'
import type { Store } from './store/types'
import { checkKnownOptions, declareOptions } from './declared-options'
import { formatDuration, parseDuration } from './duration'
import { invalidOption } from './errors'
import { checkPositiveInteger } from './option-checks'
import {
  ALGORITHMS,
  MAX_SAFE_PRODUCT,
  MAX_UNITS,
  METER_ALGORITHMS,
  WINDOW_ANCHORS,
  type Policy,
} from './policy'

/** One limit. Used directly on `createLimiter`, or as an item of `limits`. */
export interface LimitOptions {
  /**
   * How requests are counted. See docs/algorithms.md.
   * @default 'sliding-window'
   */
  algorithm?: AlgorithmName
  /** Requests (cost units) allowed per `window`. A positive integer. */
  limit: number
  /** Length of the window: ms, or `'500ms'`, `'10s'`, `'15m'`, `'1h'`, `'1d'`. */
  window: Duration
  /**
   * Requests a rested key may make at once: the bucket size of `token-bucket` and `gcra`, the
   * queue size of `leaky-bucket`. Not used by the counter algorithms (setting it there is an error).
   * @default limit
   */
  burst?: number
  /**
   * `sliding-window` only: sub-windows per window (1 = two counters, current and previous).
   * More sub-windows estimate more closely and cost one counter each. Must divide the window.
   * @default 1
   */
  precision?: number
  /**
   * `fixed-window` only: where a key's windows start. `'clock'`: at multiples of the window on
   * the clock, the same moments for every key (one shared reset, cheapest state). `'first-request'`:
   * at the first request a key makes while it has no window running, so each key's window ends
   * `window` after its own first request (express-rate-limit's, @fastify/rate-limit's and
   * koa-ratelimit's windows).
   * @default 'clock'
   */
  anchor?: WindowAnchor
  /**
   * Name of the limit in `RateLimit-Policy` headers and metrics.
   * @default `${limit}-per-${window}`, e.g. '100-per-1m'
   */
  name?: string
}

/** A function that says whether the system has spare capacity right now. */
export type SpareProbe = () => boolean

/**
 * How strictly limits hold.
 * - `'hard'`: never more than the limit.
 * - `{ soft: 0.1 }`: admits up to 10% over the limit (headers still announce the nominal limit).
 * - `{ elastic: 2, spare }`: admits up to 2x the limit while `spare()` is true; the default
 *   `spare` is `eventLoopSpare()`, true while event-loop utilisation is under 0.7.
 */
export type ThrottleMode = 'hard' | { soft: number } | { elastic: number; spare?: SpareProbe }

export type { WaitUntil } from './store-call/wait-until'

/** The limiter's part of the request, as a fallback limiter sees it. */
export interface ConsumeOptions {
  /**
   * Cost units this request takes: a positive integer.
   * @default 1
   */
  cost?: number
  /**
   * For runtimes that cancel I/O still pending once the response is returned (Cloudflare
   * Workers, Vercel's edge): when the store call times out (the request is answered without the
   * store) and the store may still answer, `waitUntil` receives a promise that settles once that
   * late reply, and the refund of what it charged, are done, so the platform keeps them running
   * (docs/reliability.md). Called at most once per consume, and only then; never on an
   * in-process store.
   * @default undefined (the late reply is awaited in the background: right on a server, whose
   * process keeps running)
   */
  waitUntil?: WaitUntil
}

/** A fallback for store failures: anything with `consume`, usually another Limiter. */
export interface FallbackLimiter {
  consume(key: string, options?: ConsumeOptions): Promise<Decision>
}

/**
 * What a limiter does when its store fails or takes longer than `timeoutMs`.
 * - `'throw'`: the call rejects with a StoreError (adapters answer 500 unless configured): an outage is never hidden as a 429.
 * - `'allow'`: fail open; the request passes (`decision.degraded` is true).
 * - `'deny'`: fail closed; the request is rejected with `retryAfterMs` 1000.
 * - a Limiter: it decides instead (e.g. a memory limiter with the limit divided by the number of instances).
 */
export type StoreErrorMode = 'throw' | 'allow' | 'deny' | FallbackLimiter

export interface LimiterOptions extends Partial<LimitOptions> {
  /** Several limits on every key, e.g. 10 per second and 500 per hour; all-or-nothing. Replaces `limit`/`window`. */
  limits?: readonly LimitOptions[]
  /**
   * Where state lives.
   * @default new MemoryStore()
   */
  store?: Store
  /**
   * Source of time in ms; tests inject a fake clock. On a shared store a given clock is read in
   * whole ms (rounded down), as such stores keep them.
   * @default monotonicTurnClock on an in-process store (MemoryStore: a wall-clock step gives no
   * new quota), turnClock (Date.now()) on a shared one; both read once per synchronous turn
   * of the event loop
   */
  clock?: Clock
  /**
   * Hard, soft or elastic limits.
   * @default 'hard'
   */
  throttle?: ThrottleMode
  /**
   * What to do when the store fails.
   * @default 'throw'
   */
  onStoreError?: StoreErrorMode
  /**
   * A store call that takes longer counts as a store failure. Not armed for in-process stores.
   * @default 1000
   */
  timeoutMs?: number
  /**
   * The shared store's circuit breaker: after `failures` store failures in a row (errors or
   * timeouts) requests are answered by `onStoreError` at once, without being sent; after
   * `coolOffMs` one probe call goes, and an answer in time closes the breaker. One breaker per
   * store, shared by every limiter on it (they must agree on it). `false`: no breaker. Not used
   * for in-process stores. See docs/reliability.md.
   * @default { failures: 5, coolOffMs: 1000 }
   */
  breaker?: BreakerOptions | false
  /**
   * Most calls out to the shared store at once, per store; beyond it a request is answered by
   * `onStoreError` at once (StoreError `ERR_SLUICE_STORE_BUSY`). A call that timed out stays out
   * until the store replies, so this bounds the memory a hung store holds.
   * @default 5000
   */
  maxInFlight?: number
  /**
   * Receives one line when the store starts failing (with the onStoreError in force), one when
   * the breaker opens and one when the store recovers (with the count of requests answered
   * without it), and a line for a late charge that could not be refunded.
   * @default console
   */
  logger?: StoreLogger
  /**
   * Prepended to every key, so that limiters sharing one store keep apart.
   * @default ''
   */
  prefix?: string
  /**
   * Decide and report, never block: every decision admits, and `decision.shadow` tells what
   * enforcing would have answered. Counts evolve exactly as they would when enforcing, so a
   * shadow limiter can be switched to enforcing without a jump. See docs/observability.md.
   * @default false
   */
  shadow?: boolean
  /**
   * Keeps the keys this limiter refuses most in a recent interval, in memory fixed by `k`
   * (Space-Saving): read them with `limiter.topRefused(n)`, export the top few with a metrics
   * recorder's `watch`, log them per interval (`log`) and in the store outage lines. Keys are
   * hashed in metrics and logs unless `reveal` says otherwise. See docs/observability.md.
   * @default false
   */
  topRefused?: TopRefusedOptions | boolean
  /**
   * Requests of one key in flight at once, beside the rate limits (all or nothing with them):
   * `5`, or `{ concurrency: 5, leaseMs, maxWaitMs, maxWaiting, name }`. An admitted decision
   * carries its `slot`, to release when the request ends. See docs/concurrency.md.
   * @default undefined (no concurrency limit)
   */
  concurrency?: number | ConcurrencyLimit
  /**
   * Called after every `consume` with what was decided (key, policy name, allowed, remaining,
   * shadow, store latency, fallback). Metrics plug in here: `onDecision: prometheusMetrics()`.
   * A hook that throws never changes the decision (the error is reported once as a process
   * warning). Without a hook nothing is measured or allocated for it.
   * @default undefined
   */
  onDecision?: DecisionHook
}

export { checkKnownOptions }

/**
 * The options of one limit, declared once: createLimiter, the HTTP adapters and the simulator
 * take them. Their values are checked together, by resolvePolicy (a burst depends on the
 * algorithm, a precision on the window...).
 */
export const LIMIT_OPTIONS = declareOptions<LimitOptions>('a limit', {
  algorithm: { doc: 'how requests are counted', default: DEFAULT_ALGORITHM },
  limit: { doc: 'requests (cost units) allowed per window' },
  window: { doc: 'length of the window: ms or a duration string' },
  burst: { doc: 'requests a rested key may make at once (meters); default: `limit`' },
  precision: { doc: 'sliding-window sub-windows per window', default: 1 },
  anchor: { doc: "fixed-window: where a key's windows start", default: 'clock' },
  name: {
    doc: 'the limit in RateLimit-Policy headers and metrics; default: `<limit>-per-<window>`',
  },
})

/** The options of one limit (LimitOptions), as createLimiter and the simulator accept them. */
export const LIMIT_OPTION_NAMES = LIMIT_OPTIONS.names

/** Short codes of the algorithms: in policy ids, and in what stores send to their scripts. */
export const ALGORITHM_CODES: Readonly<Record<AlgorithmName, string>> = Object.fromEntries(
  REGISTRY.map((row) => [row.name, row.code]),
) as Record<AlgorithmName, string>

/**
 * The code a store sends for `policy`: its algorithm's, or that of its variant anchored at each
 * key's first request (its own code: in policy ids, so the two anchors never read each other's
 * state).
 */
export function policyCode(policy: Pick<Policy, 'algorithm' | 'anchor'>): string {
  const row = ROWS[policy.algorithm]
  return policy.anchor === 'first-request' && row.firstRequest !== undefined
    ? row.firstRequest.code
    : row.code
}

export { checkPositiveInteger }

/** Validates one limit and derives the policy stores see. `path` prefixes option names in errors. */
export function resolvePolicy(options: LimitOptions, path = ''): Policy {
  if (options === null || typeof options !== 'object')
    invalidOption(path || 'limits[]', options, 'an object')
  const algorithm = options.algorithm ?? DEFAULT_ALGORITHM
  if (!ALGORITHMS.includes(algorithm)) {
    invalidOption(
      `${path}algorithm`,
      algorithm,
      `one of ${ALGORITHMS.map((a) => `'${a}'`).join(', ')}`,
    )
  }
  const limit = checkPositiveInteger(options.limit, `${path}limit`)
  const windowMs = parseDuration(options.window, `${path}window`)
  const meter = METER_ALGORITHMS.has(algorithm)
  checkTaken(algorithm, 'burst', options.burst, path)
  const burst =
    options.burst === undefined ? limit : checkPositiveInteger(options.burst, `${path}burst`)
  let precision = 1
  if (options.precision !== undefined) {
    checkTaken(algorithm, 'precision', options.precision, path)
    precision = checkPositiveInteger(options.precision, `${path}precision`)
    if (windowMs % precision !== 0) {
      invalidOption(`${path}precision`, precision, `a divisor of the window (${windowMs} ms)`)
    }
  }
  const anchor = resolveAnchor(options.anchor, algorithm, path)
  checkSize(algorithm, limit, burst, windowMs, path)
  const name = options.name ?? `${limit}-per-${formatDuration(windowMs)}`
  if (typeof name !== 'string' || name.length === 0)
    invalidOption(`${path}name`, name, 'a non-empty string')
  const code = policyCode({ algorithm, anchor })
  const id = meter
    ? `${code}:${limit}:${windowMs}:${burst}`
    : precision > 1
      ? `${code}:${limit}:${windowMs}:${precision}`
      : `${code}:${limit}:${windowMs}`
  return { id, name, algorithm, limit, windowMs, burst: meter ? burst : limit, precision, anchor }
}

/**
 * The sizes every store keeps exact. Past 2^50 for limit x window a policy is wide (isWide),
 * exact through BigInt, except sliding-log: it keeps one entry per unit, so its bound is the
 * narrow one. A meter's full bucket must drain within 2^50 ms, so its times stay exact too.
 */
function checkSize(
  algorithm: AlgorithmName,
  limit: number,
  burst: number,
  windowMs: number,
  path: string,
): void {
  if (limit > MAX_UNITS) invalidOption(`${path}limit`, limit, 'at most 2^50 (1125899906842624)')
  if (burst > MAX_UNITS) invalidOption(`${path}burst`, burst, 'at most 2^50 (1125899906842624)')
  if (windowMs > MAX_SAFE_PRODUCT) {
    invalidOption(`${path}window`, windowMs, 'at most 2^50 ms')
  }
  if (ROWS[algorithm].family === 'log' && limit * windowMs > MAX_SAFE_PRODUCT) {
    invalidOption(
      `${path}limit`,
      limit,
      `small enough that limit x window (${windowMs} ms) stays under 2^50 for '${algorithm}', which keeps one entry per unit (a counter algorithm takes any size)`,
    )
  }
  if (METER_ALGORITHMS.has(algorithm) && (burst / limit) * windowMs > MAX_SAFE_PRODUCT) {
    invalidOption(
      `${path}burst`,
      burst,
      `small enough that a full bucket drains within 2^50 ms (burst x window / limit; window ${windowMs} ms, limit ${limit})`,
    )
  }
}

/** Refuses an algorithm-specific option given to an algorithm its registry row says does not take it. */
function checkTaken(
  algorithm: AlgorithmName,
  option: AlgorithmOption,
  value: unknown,
  path: string,
): void {
  if (value === undefined || ROWS[algorithm].takes.includes(option)) return
  invalidOption(
    `${path}${option}`,
    value,
    `unset for '${algorithm}' (${option} applies to ${listNames(namesTaking(option), '', 'and')})`,
  )
}

/** Validates `anchor`: only for the algorithms that take it, and one of the two. */
function resolveAnchor(anchor: unknown, algorithm: AlgorithmName, path: string): WindowAnchor {
  if (anchor === undefined) return 'clock'
  checkTaken(algorithm, 'anchor', anchor, path)
  if (!WINDOW_ANCHORS.includes(anchor as WindowAnchor)) {
    invalidOption(
      `${path}anchor`,
      anchor,
      `one of ${WINDOW_ANCHORS.map((a) => `'${a}'`).join(', ')}`,
    )
  }
  return anchor as WindowAnchor
}
