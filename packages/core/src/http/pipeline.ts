import { STATUS_CODES, type ServerResponse } from 'node:http'
import { isPromise } from '../promise'
import ipaddr from 'ipaddr.js'
import { createLimiter, directConsumer, type Limiter } from '../create-limiter'
import type { Clock } from '../clock'
import type { Decision } from '../decision'
import type { Duration } from '../duration'
import { invalidOption, SluiceError } from '../errors'
import type { DecisionHook } from '../events'
import type { DescriptorEntry } from '../rules/compile'
import {
  createRulesLimiter,
  type RulesDecision,
  type RulesLimiter,
  type RulesSource,
} from '../rules/limiter'
import {
  checkKnownOptions,
  checkPositiveInteger,
  type LimiterOptions,
  type LimitOptions,
  type StoreErrorMode,
  type ThrottleMode,
} from '../options'
import { METER_ALGORITHMS, type AlgorithmName } from '../policy'
import { MemoryStore } from '../store/memory-store'
import type { Store } from '../store/types'
import type { BreakerOptions } from '../store-call/health'
import { checkMaxDelayMs, checkMaxHolds, Holds } from './holds'
import { ProxyWarnings, type ProxyTrust } from './proxy-warnings'
import {
  checkStandardHeaders,
  createHeaderWriter,
  DEFAULT_LEGACY_NAMES,
  responseTimes,
  type HeaderList,
  type LegacyHeaderNames,
  type ResetStyle,
  type StandardHeadersDraft,
} from './headers'
import {
  checkBadKeyMode,
  createBadKeyHandler,
  keyFromResult,
  type BadKeyMode,
  type KeyResult,
} from './key-result'
import {
  boundKey,
  checkIpv6Subnet,
  ipKey,
  normalizeIp,
  type HttpRequestLike,
  type Logger,
} from './keys'

type Awaitable<T> = T | Promise<T>

/** What a rejection answers with: a string (sent as the body's `message`) or a JSON value sent as the body. */
export type RateLimitMessage = string | Record<string, unknown> | readonly unknown[]

/** A list of IPs, CIDR ranges (`10.0.0.0/8`) and keys; or a function of the request and its key. */
export type RequestList<Req> = readonly string[] | ((req: Req, key: string) => Awaitable<boolean>)

/** Options every adapter accepts, with the same meaning in Express, Fastify and Koa. */
export interface HttpLimitOptions<Req = HttpRequestLike> {
  /**
   * Requests per `window`; a function of the request (sync or async) gives per-tier limits (one
   * limiter per distinct value, created on first use and cached).
   * @default 100
   */
  limit?: number | ((req: Req) => Awaitable<number>)
  /**
   * Window length: ms or `'500ms'`, `'10s'`, `'15m'`, `'1h'`, `'1d'`, `'1 minute'`.
   * @default '1m'
   */
  window?: Duration
  /** @default 'sliding-window' */
  algorithm?: AlgorithmName
  /** Capacity of token-bucket, gcra and leaky-bucket. @default limit */
  burst?: number
  /** sliding-window sub-windows. @default 1 */
  precision?: number
  /** Several limits at once (all-or-nothing); replaces `limit`/`window`. @default undefined */
  limits?: readonly LimitOptions[]
  /** @default 'hard' */
  throttle?: ThrottleMode
  /** Cost units a request takes: a positive integer or a function of the request. @default 1 */
  cost?: number | ((req: Req) => Awaitable<number>)
  /**
   * The request's key: a non-empty string, or a number or bigint (stringified). `undefined` falls
   * back to the client IP; `false` lets the request through unlimited. See `ipKey`, `headerKey`, `userKey`, `combineKeys`.
   * @default ipKey({ ipv6Subnet })
   */
  key?: (req: Req) => Awaitable<KeyResult>
  /**
   * A `key` result that is no key (`null`, `''`, `NaN`, an object...): `'ip'` limits such a
   * request by its client IP instead and logs once (with the route); `'throw'` hands an error to
   * the framework (500). Never one bucket shared by every such request.
   * @default 'ip'
   */
  onBadKey?: BadKeyMode
  /** IPv6 prefix the default key groups by (32-128), or `false`. @default 64 */
  ipv6Subnet?: number | false
  /** Where counters live. @default new MemoryStore() (one per middleware/plugin) */
  store?: Store
  /** Source of time in ms (tests inject a fake one). @default turnClock (Date.now(), read once per synchronous turn) */
  clock?: Clock
  /** Prepended to every key in the store. @default '' */
  prefix?: string
  /** Requests for which it returns true are not limited and get no headers. @default undefined */
  skip?: (req: Req) => Awaitable<boolean>
  /** Never limited: IPs, CIDR ranges or keys, or a function. @default undefined */
  allowList?: RequestList<Req>
  /** Always refused with 403: IPs, CIDR ranges or keys, or a function. @default undefined */
  denyList?: RequestList<Req>
  /** Give back the request's cost when the response succeeds. @default false */
  skipSuccessfulRequests?: boolean
  /** Give back the request's cost when the response fails or the client aborts. @default false */
  skipFailedRequests?: boolean
  /** Decides success for the two options above (`res` is Node's response). @default res.statusCode < 400 */
  requestWasSuccessful?: (req: Req, res: ServerResponse) => Awaitable<boolean>
  /** Status of a rejection. @default 429 */
  statusCode?: number
  /**
   * The rejection's message: a string goes in the body's `message`, an object is the body. A
   * function of the request and decision (sync or async) may compute it.
   * @default 'Too many requests, please try again in N seconds.'
   */
  message?: RateLimitMessage | ((req: Req, decision: Decision) => Awaitable<RateLimitMessage>)
  /** Called for every rejected request (e.g. to log or count). @default undefined */
  onLimited?: (req: Req, decision: Decision) => void
  /**
   * After this many rejections (429) in one window, a key's further rejections are 403 until the
   * window ends. Counted per process. @default undefined (off)
   */
  ban?: number
  /** IETF RateLimit fields: `'draft-6'`, `'draft-7'`, `'draft-8'`, `'draft-10'`; `true` means draft-6. @default false */
  standardHeaders?: StandardHeadersDraft | boolean
  /** `X-RateLimit-Limit`, `-Remaining`, `-Reset` and (on rejection) `-Retry-After`. @default true */
  legacyHeaders?: boolean
  /** `Retry-After` on rejections. @default true */
  retryAfterHeader?: boolean
  /** What to do when the store fails: `'throw'` (framework error handling, 500), `'allow'`, `'deny'` or a fallback limiter. @default 'throw' */
  onStoreError?: StoreErrorMode
  /** A store call slower than this counts as a failure. @default 1000 */
  timeoutMs?: number
  /** The shared store's circuit breaker (see createLimiter). @default { failures: 5, coolOffMs: 1000 } */
  breaker?: BreakerOptions | false
  /** Most calls out to the shared store at once (see createLimiter). @default 5000 */
  maxInFlight?: number
  /** Receives one-time warnings (proxy trust, missing IPs, failed refunds), store outage lines and rules reload news. @default console */
  logger?: Logger
  /**
   * Called with a DecisionEvent for every decided request (`prometheusMetrics()` is one such
   * hook). With `limit`/`limits`: one event per request, keyed by the request's key, named after
   * the binding policy. With `rules`: one event per matched rule, keyed by the rule's state key,
   * named after the rule, `shadow: true` for shadow rules. Runs synchronously; see
   * docs/observability.md.
   * @default undefined
   */
  onDecision?: DecisionHook
  /**
   * Limits from rules (docs/rules.md) instead of `limit`/`limits`: a file path (loaded now,
   * watched and hot-reloaded), a rules object, a RuleSet (`loadRules`) or a RulesWatcher
   * (`watchRules`). Needs `descriptors`. Every rule a request matches is enforced in one
   * all-or-nothing store call; a request that matches none passes without headers.
   * @default undefined
   */
  rules?: RulesSource
  /**
   * With `rules`: the request's descriptor entries, e.g.
   * `(req) => [['route', req.path], ['user', req.user?.id]]` (sync or async).
   * @default undefined
   */
  descriptors?: (req: Req) => Awaitable<readonly DescriptorEntry[]>
  /**
   * Hold a request that would be rejected until its reserved slot (limiter.wait) instead of
   * answering 429, for at most `maxWaitMs`; a longer wait is answered 429 at once, and a client
   * that disconnects while held gives its slot back. Needs a meter algorithm (token-bucket,
   * leaky-bucket, gcra); with `rules`, only meter rules hold requests.
   * @default undefined (off)
   */
  queue?: { maxWaitMs: number }
  /**
   * leaky-bucket shaping: the longest an admitted request is held for its `delayMs` (without
   * `queue`). A request that would wait longer gets 429 with Retry-After, and its charge back.
   * @default 30000
   */
  maxDelayMs?: number
  /**
   * leaky-bucket shaping: requests held at once per limiter; beyond, 429 (charge given back).
   * A client that disconnects while held is released at once and its charge given back.
   * @default 10000
   */
  maxHolds?: number
}

/** How one framework writes its answer; fixed per adapter. */
export interface FrameworkDefaults<Req> {
  /** Named in warnings, e.g. `'Express'`. */
  framework: string
  /** Tells the trust-proxy warnings how the framework is configured. */
  proxyTrust?: (req: Req) => ProxyTrust
  /** The TCP peer's address, so a request whose IP is its sender's despite X-Forwarded-For is seen. */
  peerAddress?: (req: Req) => string | undefined
  /** How to set the trust, quoted in the warning. */
  proxyHint?: string
  resetStyle: ResetStyle
  legacyNames?: LegacyHeaderNames
  omitWhenAllowed?: readonly string[]
  omitWhenRejected?: readonly string[]
  /** The adapter answers rate-limit rejections itself (a `handler`): no body is built for them. */
  customRejection?: boolean
}

/** The request goes on untouched (skipped, allow-listed or bypassed by its key). */
export interface PassVerdict {
  readonly action: 'pass'
}

/** The request goes on with rate-limit headers and its decision. */
export interface AllowVerdict {
  readonly action: 'allow'
  readonly decision: Decision
  readonly headers: HeaderList
  readonly key: string
}

/** The request is answered here: limited (429), banned or denied (403). */
export interface RejectVerdict {
  readonly action: 'reject'
  /** `aborted`: the client went away while its request was held (`queue`); the answer goes nowhere. */
  readonly reason: 'limited' | 'banned' | 'denied' | 'aborted'
  readonly status: number
  /** Absent for deny-listed requests, which never reach the limiter. */
  readonly decision: Decision | undefined
  readonly headers: HeaderList
  /** The JSON body; `undefined` when the adapter answers with its own handler. */
  readonly body: unknown
  readonly retryAfterSeconds: number
  readonly key: string
}

export type HttpVerdict = PassVerdict | AllowVerdict | RejectVerdict

/** Options resolved once; `decide` runs per request. */
export interface HttpLimiter<Req> {
  /** Runs skip, key, lists, the one store call, headers, ban and hold; tracks refunds on `res`. */
  decide(req: Req, res: ServerResponse): Promise<HttpVerdict>
  /**
   * `decide` without the promise when none is needed: the verdict itself in the common
   * configuration (in-process store, no async option), else a promise of it. It may throw where
   * `decide` rejects. For adapters' hot paths.
   */
  decideNow(req: Req, res: ServerResponse): HttpVerdict | Promise<HttpVerdict>
  /** The limiter of a fixed limit (undefined for per-tier limits and rules): for tests and `reset`. */
  readonly limiter: Limiter | undefined
  /** The rules limiter when the `rules` option is given. */
  readonly rulesLimiter: RulesLimiter | undefined
  readonly store: Store
  /**
   * Stops what this limiter started: the watcher of a `rules` file path. A RulesWatcher or
   * RuleSet passed in stays open (it is the caller's). Idempotent; the store is not closed.
   */
  close(): void
}

export const HTTP_OPTION_NAMES: readonly string[] = [
  'limit',
  'window',
  'algorithm',
  'burst',
  'precision',
  'limits',
  'throttle',
  'cost',
  'key',
  'onBadKey',
  'ipv6Subnet',
  'store',
  'clock',
  'prefix',
  'skip',
  'allowList',
  'denyList',
  'skipSuccessfulRequests',
  'skipFailedRequests',
  'requestWasSuccessful',
  'statusCode',
  'message',
  'onLimited',
  'ban',
  'standardHeaders',
  'legacyHeaders',
  'retryAfterHeader',
  'onStoreError',
  'timeoutMs',
  'breaker',
  'maxInFlight',
  'logger',
  'onDecision',
  'rules',
  'descriptors',
  'queue',
  'maxDelayMs',
  'maxHolds',
]

const PASS: PassVerdict = { action: 'pass' }
/** Distinct per-tier limits kept; beyond it the oldest is dropped (limiters are stateless views of the store). */
const MAX_TIERS = 256
/** Keys the ban counter remembers (per process). */
const MAX_BAN_KEYS = 10_000

/** Throws unless at most one of an option and its peer-library alias is given (adapters, at start-up). */
export function checkAlias(
  alias: string,
  aliasValue: unknown,
  canonical: string,
  canonicalValue: unknown,
): void {
  if (aliasValue !== undefined && canonicalValue !== undefined) {
    invalidOption(alias, aliasValue, `unset when \`${canonical}\` is given (it is an alias of it)`)
  }
}

function checkFunction(value: unknown, option: string): void {
  if (value !== undefined && typeof value !== 'function') invalidOption(option, value, 'a function')
}

function checkBoolean(value: unknown, option: string): boolean {
  if (value === undefined) return false
  if (typeof value !== 'boolean') invalidOption(option, value, 'true or false')
  return value
}

/** Compiles an IP/CIDR/key list into a matcher, once. */
function compileList<Req extends HttpRequestLike>(
  list: RequestList<Req> | undefined,
  option: string,
): ((req: Req, key: string) => Awaitable<boolean>) | undefined {
  if (list === undefined) return undefined
  if (typeof list === 'function') return list
  if (!Array.isArray(list))
    invalidOption(option, list, 'an array of IPs, CIDR ranges or keys, or a function')
  const exact = new Set<string>()
  const ranges: Array<[ipaddr.IPv4 | ipaddr.IPv6, number]> = []
  for (const entry of list as readonly unknown[]) {
    if (typeof entry !== 'string') invalidOption(`${option}[]`, entry, 'a string')
    const slash = entry.indexOf('/')
    if (slash > 0 && ipaddr.isValid(entry.slice(0, slash)) && !ipaddr.isValidCIDR(entry)) {
      invalidOption(
        `${option}[]`,
        entry,
        'a CIDR range whose prefix length fits the address (IPv4 0-32, IPv6 0-128), an IP or a key',
      )
    }
    if (ipaddr.isValidCIDR(entry)) ranges.push(ipaddr.parseCIDR(entry))
    else exact.add(ipaddr.isValid(entry) ? normalizeIp(entry, false) : entry)
  }
  return function inList(req, key) {
    if (exact.has(key)) return true
    const ip = req.ip
    if (ip === undefined || ip === '' || !ipaddr.isValid(ip)) return false
    if (exact.has(normalizeIp(ip, false))) return true
    if (ranges.length === 0) return false
    const address = ipaddr.process(ip)
    return ranges.some((range) => address.kind() === range[0].kind() && address.match(range))
  }
}

/** Options that set limits, which `rules` replaces. */
const RULES_EXCLUDE = [
  'limit',
  'limits',
  'window',
  'algorithm',
  'burst',
  'precision',
  'throttle',
] as const

/** Checks `queue` once; its maxWaitMs, or undefined when queueing is off. */
function checkQueue(queue: unknown): number | undefined {
  if (queue === undefined) return undefined
  if (typeof queue !== 'object' || queue === null || Array.isArray(queue)) {
    invalidOption('queue', queue, 'an object { maxWaitMs }')
  }
  checkKnownOptions(queue, ['maxWaitMs'], 'queue')
  const ms = (queue as { maxWaitMs?: unknown }).maxWaitMs
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms <= 0) {
    invalidOption('queue.maxWaitMs', ms, 'a positive number of ms')
  }
  return ms
}

/** An AbortSignal that fires when the response closes before it finished (the client left). */
function holdSignal(res: ServerResponse): { signal: AbortSignal; release: () => void } {
  const controller = new AbortController()
  const onClose = () => {
    if (!res.writableFinished)
      controller.abort(new SluiceError('ERR_SLUICE_ABORTED', 'the client went away while queued'))
  }
  res.once('close', onClose)
  return { signal: controller.signal, release: () => res.off('close', onClose) }
}

function neverMessage(decision: Decision): string {
  const policy = decision.policies.find((p) => !p.allowed && !Number.isFinite(p.retryAfterMs))
  const capacity = (policy ?? decision).policy.burst
  return `This request costs more than the limit of ${capacity} allows at once, so it can never pass; retrying will not help.`
}

function defaultMessage(seconds: number): string {
  return `Too many requests, please try again in ${seconds} second${seconds === 1 ? '' : 's'}.`
}

/**
 * Validates and normalises an adapter's options once, at start-up, and returns the per-request
 * pipeline. A bad option throws a ConfigError naming it and its value.
 */
export function createHttpLimiter<Req extends HttpRequestLike>(
  options: HttpLimitOptions<Req>,
  defaults: FrameworkDefaults<Req>,
): HttpLimiter<Req> {
  if (options === null || typeof options !== 'object')
    invalidOption('options', options, 'an object')
  checkKnownOptions(options, HTTP_OPTION_NAMES, `${defaults.framework} rateLimit`)
  for (const name of ['key', 'skip', 'onLimited', 'requestWasSuccessful'] as const) {
    checkFunction(options[name], name)
  }
  const logger = options.logger ?? console
  if (typeof logger !== 'object' || logger === null || typeof logger.warn !== 'function') {
    invalidOption('logger', logger, 'an object with a warn(message) method')
  }
  const store = options.store ?? new MemoryStore()
  const base: LimiterOptions = {
    algorithm: options.algorithm,
    burst: options.burst,
    precision: options.precision,
    throttle: options.throttle,
    store,
    clock: options.clock,
    onStoreError: options.onStoreError,
    timeoutMs: options.timeoutMs,
    breaker: options.breaker,
    maxInFlight: options.maxInFlight,
    logger,
    prefix: options.prefix,
    onDecision: options.onDecision,
  }
  const limitOption = options.limit
  let fixed: Limiter | undefined
  let tiers: Map<number, Limiter> | undefined
  const descriptorsFn = options.descriptors
  checkFunction(descriptorsFn, 'descriptors')
  let rulesLimiter: RulesLimiter | undefined
  if (options.rules !== undefined) {
    for (const name of RULES_EXCLUDE) {
      if (options[name] !== undefined) {
        invalidOption(name, options[name], 'unset when `rules` is given (the rules set the limits)')
      }
    }
    if (descriptorsFn === undefined) {
      invalidOption(
        'descriptors',
        descriptorsFn,
        "a function (req) => [['route', path], ['user', id], ...] when `rules` is given",
      )
    }
    if (options.onStoreError !== undefined && typeof options.onStoreError !== 'string') {
      invalidOption('onStoreError', options.onStoreError, "'throw', 'allow' or 'deny' with `rules`")
    }
    rulesLimiter = createRulesLimiter({
      rules: options.rules,
      store,
      clock: options.clock,
      prefix: options.prefix,
      onStoreError: options.onStoreError as 'throw' | 'allow' | 'deny' | undefined,
      timeoutMs: options.timeoutMs,
      breaker: options.breaker,
      maxInFlight: options.maxInFlight,
      logger,
      onDecision: options.onDecision,
    })
  } else if (descriptorsFn !== undefined) {
    invalidOption('descriptors', descriptorsFn, 'unset unless `rules` is given')
  } else if (options.limits !== undefined) {
    if (limitOption !== undefined)
      invalidOption('limit', limitOption, 'unset when `limits` is given')
    fixed = createLimiter({ ...base, limits: options.limits, window: options.window })
  } else if (typeof limitOption === 'function') {
    // Validates everything but the limit now; each tier's limit is checked when first seen.
    fixed = undefined
    tiers = new Map()
    createLimiter({ ...base, limit: 1, window: options.window ?? '1m' })
  } else {
    fixed = createLimiter({ ...base, limit: limitOption ?? 100, window: options.window ?? '1m' })
  }
  const clock = (rulesLimiter ?? fixed ?? createLimiter({ ...base, limit: 1, window: 1000 })).clock
  const maxWaitMs = checkQueue(options.queue)
  if (maxWaitMs !== undefined && rulesLimiter === undefined) {
    const counter = fixed?.policies.find((p) => !METER_ALGORITHMS.has(p.algorithm))
    const algorithm =
      fixed === undefined ? (options.algorithm ?? 'sliding-window') : counter?.algorithm
    if (algorithm !== undefined && !METER_ALGORITHMS.has(algorithm)) {
      invalidOption(
        'algorithm',
        algorithm,
        "a meter algorithm ('token-bucket', 'leaky-bucket' or 'gcra') when `queue` is given (only they can reserve a slot)",
      )
    }
  }

  const cost = options.cost ?? 1
  if (typeof cost !== 'function') checkPositiveInteger(cost, 'cost')
  const statusCode = options.statusCode ?? 429
  if (!Number.isInteger(statusCode) || statusCode < 400 || statusCode > 599) {
    invalidOption('statusCode', statusCode, 'an HTTP error status (400-599)')
  }
  const ban = options.ban
  if (ban !== undefined && (!Number.isSafeInteger(ban) || ban < 0)) {
    invalidOption('ban', ban, 'a whole number of rejections (0 bans at the first)')
  }
  const skipSuccessful = checkBoolean(options.skipSuccessfulRequests, 'skipSuccessfulRequests')
  const skipFailed = checkBoolean(options.skipFailedRequests, 'skipFailedRequests')
  const refunds = skipSuccessful || skipFailed
  const message = options.message
  if (
    message !== undefined &&
    typeof message !== 'string' &&
    typeof message !== 'function' &&
    (typeof message !== 'object' || message === null)
  ) {
    invalidOption('message', message, 'a string, an object or a function')
  }
  const writeHeaders = createHeaderWriter({
    legacy:
      options.legacyHeaders === false ? false : (defaults.legacyNames ?? DEFAULT_LEGACY_NAMES),
    standard: checkStandardHeaders(options.standardHeaders),
    resetStyle: defaults.resetStyle,
    retryAfter: options.retryAfterHeader ?? true,
    omitWhenAllowed: defaults.omitWhenAllowed,
    omitWhenRejected: defaults.omitWhenRejected,
  })
  const keyFn = options.key
  const holds = new Holds(checkMaxHolds(options.maxHolds), checkMaxDelayMs(options.maxDelayMs))
  const badKey = createBadKeyHandler(checkBadKeyMode(options.onBadKey), logger)
  const keyByIp = ipKey({ ipv6Subnet: checkIpv6Subnet(options.ipv6Subnet ?? 64), logger })
  const skip = options.skip
  const inAllowList = compileList(options.allowList, 'allowList')
  const inDenyList = compileList(options.denyList, 'denyList')
  const onLimited = options.onLimited
  const requestWasSuccessful = options.requestWasSuccessful
  const limitedError = STATUS_CODES[statusCode] ?? 'Too Many Requests'
  const bans = ban === undefined ? undefined : new Map<string, { count: number; until: number }>()

  const proxy = new ProxyWarnings(defaults, logger, keyFn === undefined)

  function limiterFor(limit: number): Limiter {
    let limiter = tiers!.get(limit)
    if (limiter === undefined) {
      limiter = createLimiter({ ...base, limit, window: options.window ?? '1m' })
      if (tiers!.size >= MAX_TIERS) tiers!.delete(tiers!.keys().next().value!)
      tiers!.set(limit, limiter)
    }
    return limiter
  }

  /** Counts a rejection towards the ban; true once the key is past `ban` in this window. */
  function banned(key: string, decision: Decision): boolean {
    const now = clock()
    let entry = bans!.get(key)
    if (entry === undefined || entry.until <= now) {
      if (bans!.size >= MAX_BAN_KEYS) bans!.delete(bans!.keys().next().value!)
      entry = { count: 0, until: now + decision.policy.windowMs }
      bans!.set(key, entry)
    }
    entry.count++
    return entry.count > ban!
  }

  async function settle(req: Req, res: ServerResponse, key: string, refund: () => Promise<void>) {
    try {
      // 'close' without a finished response: the client went away, which counts as a failure.
      const success = res.writableFinished
        ? requestWasSuccessful
          ? await requestWasSuccessful(req, res)
          : res.statusCode < 400
        : false
      if (success ? skipSuccessful : skipFailed) await refund()
    } catch (error) {
      logger.warn(`[sluice] refund for key ${JSON.stringify(key)} failed: ${String(error)}`)
    }
  }

  /** The body of a rate-limit rejection; a promise only when `message` is a function. */
  function rejectionBody(req: Req, decision: Decision, seconds: number): Awaitable<unknown> {
    if (typeof message === 'function') {
      return (async () => bodyOf(await message(req, decision), seconds, decision))()
    }
    return bodyOf(message, seconds, decision)
  }

  function bodyOf(
    value: RateLimitMessage | undefined,
    seconds: number,
    decision: Decision,
  ): unknown {
    if (value === undefined || typeof value === 'string') {
      // seconds 0 on a rejection: the cost is over the capacity, no wait will make it pass.
      if (seconds === 0) {
        return { error: limitedError, message: value ?? neverMessage(decision), retryAfter: null }
      }
      return { error: limitedError, message: value ?? defaultMessage(seconds), retryAfter: seconds }
    }
    return value
  }

  const consumeDirect = fixed === undefined ? undefined : directConsumer(fixed)
  const fixedCost = typeof cost === 'function' ? undefined : cost
  // The common configuration (IP key, fixed limit and cost, no option that may be async) is
  // decided without an async frame: on an in-process store without a promise either, on any
  // other store through the store call's promise alone.
  const fastPath =
    consumeDirect !== undefined &&
    fixedCost !== undefined &&
    skip === undefined &&
    keyFn === undefined &&
    inAllowList === undefined &&
    inDenyList === undefined &&
    maxWaitMs === undefined &&
    rulesLimiter === undefined

  /** decide for the fast-path configuration: the same steps as decideAsync, without awaits. */
  function decideFast(req: Req, res: ServerResponse): Awaitable<HttpVerdict> {
    if (proxy.armed) proxy.check(req)
    const key = boundKey(keyByIp(req))
    const units = fixedCost!
    const decision = consumeDirect!(key, units)
    if (isPromise(decision)) {
      return decision.then((settled) =>
        conclude(req, res, key, units, settled, undefined, undefined, fixed),
      )
    }
    return conclude(req, res, key, units, decision, undefined, undefined, fixed)
  }

  async function decideAsync(req: Req, res: ServerResponse): Promise<HttpVerdict> {
    if (proxy.armed) proxy.check(req)
    if (skip !== undefined && (await skip(req))) return PASS
    const given = keyFn === undefined ? undefined : await keyFn(req)
    if (given === false) return PASS
    const named = given === undefined ? undefined : (keyFromResult(given) ?? badKey(given, req))
    const key = boundKey(named === undefined ? keyByIp(req) : named)
    if (inAllowList !== undefined && (await inAllowList(req, key))) return PASS
    if (inDenyList !== undefined && (await inDenyList(req, key))) {
      return {
        action: 'reject',
        reason: 'denied',
        status: 403,
        decision: undefined,
        headers: [],
        body: { error: 'Forbidden', message: 'Access denied.' },
        retryAfterSeconds: 0,
        key,
      }
    }
    const units = typeof cost === 'function' ? checkPositiveInteger(await cost(req), 'cost') : cost
    let decision: Decision
    let rules: RulesDecision | undefined
    let limiter: Limiter | undefined
    // queue: the client leaving while its request is held aborts the wait (the slot goes back).
    const held = maxWaitMs === undefined ? undefined : holdSignal(res)
    try {
      if (rulesLimiter !== undefined) {
        const entries = await descriptorsFn!(req)
        const result: RulesDecision =
          held === undefined
            ? await rulesLimiter.consume(entries, { cost: units })
            : await rulesLimiter.wait(entries, {
                cost: units,
                maxWaitMs: maxWaitMs!,
                signal: held.signal,
              })
        if (result.decision === undefined) return PASS
        decision = result.decision
        rules = result
      } else {
        limiter = fixed ?? limiterFor(await (limitOption as (req: Req) => Awaitable<number>)(req))
        decision =
          held === undefined
            ? await limiter.consume(key, { cost: units })
            : await limiter.wait(key, { cost: units, maxWaitMs, signal: held.signal })
      }
    } catch (error) {
      if (held?.signal.aborted) return abortedVerdict(key)
      throw error
    } finally {
      held?.release()
    }
    return conclude(req, res, key, units, decision, held, rules, limiter)
  }

  /** What follows the store call: headers, refund tracking, shaping, onLimited, ban and body. */
  function conclude(
    req: Req,
    res: ServerResponse,
    key: string,
    units: number,
    decision: Decision,
    held: { signal: AbortSignal } | undefined,
    rules: RulesDecision | undefined,
    limiter: Limiter | undefined,
  ): Awaitable<HttpVerdict> {
    // The instant the limiter decided at: exact for refunds, and no second clock read.
    const now = decision.at
    const times = responseTimes(decision, now, defaults.resetStyle)
    const headers = writeHeaders(decision, times)
    if (decision.allowed) {
      const refund =
        rules !== undefined
          ? () => rulesLimiter!.refund(rules, { cost: units, at: decision.at })
          : () => limiter!.refund(key, { cost: units, at: decision.at })
      const verdict: AllowVerdict = { action: 'allow', decision, headers, key }
      // leaky-bucket shaping: hold the request so output leaves at the configured rate (a
      // queued request was already held for its slot).
      if (held === undefined && decision.delayMs > 0) {
        return shape(req, res, key, decision, refund, verdict)
      }
      if (refunds) res.once('close', () => void settle(req, res, key, refund))
      return verdict
    }
    if (onLimited !== undefined) onLimited(req, decision)
    const seconds = times.retryAfterSeconds
    if (bans !== undefined && banned(key, decision)) {
      return {
        action: 'reject',
        reason: 'banned',
        status: 403,
        decision,
        headers,
        body: {
          error: 'Forbidden',
          message: `Banned for too many requests; try again in ${seconds} seconds.`,
          retryAfter: seconds,
        },
        retryAfterSeconds: seconds,
        key,
      }
    }
    const body = defaults.customRejection ? undefined : rejectionBody(req, decision, seconds)
    if (isPromise(body)) {
      return body.then((value) => limitedVerdict(decision, headers, value, seconds, key))
    }
    return limitedVerdict(decision, headers, body, seconds, key)
  }

  /**
   * Holds an admitted request for its `delayMs`, within `maxDelayMs` and `maxHolds`; a request
   * beyond either, or whose client leaves while held, is not passed on and its charge goes back.
   */
  function shape(
    req: Req,
    res: ServerResponse,
    key: string,
    decision: Decision,
    refund: () => Promise<void>,
    verdict: AllowVerdict,
  ): Awaitable<HttpVerdict> {
    const giveBack = (): void => {
      refund().catch((error: unknown) => {
        logger.warn(`[sluice] refund for key ${JSON.stringify(key)} failed: ${String(error)}`)
      })
    }
    if (!holds.admits(decision.delayMs)) {
      giveBack()
      const seconds = Math.max(1, Math.ceil(decision.delayMs / 1000))
      const retry: HeaderList = [...verdict.headers, ['Retry-After', String(seconds)]]
      const body = { error: limitedError, message: defaultMessage(seconds), retryAfter: seconds }
      return limitedVerdict(decision, retry, body, seconds, key)
    }
    return holds.hold(decision.delayMs, res, giveBack).then((end) => {
      if (end === 'left') return abortedVerdict(key) // its charge is back already
      if (refunds) res.once('close', () => void settle(req, res, key, refund))
      return verdict
    })
  }

  function limitedVerdict(
    decision: Decision,
    headers: HeaderList,
    body: unknown,
    seconds: number,
    key: string,
  ): RejectVerdict {
    return {
      action: 'reject',
      reason: 'limited',
      status: statusCode,
      decision,
      headers,
      body,
      retryAfterSeconds: seconds,
      key,
    }
  }

  const decideNow: (req: Req, res: ServerResponse) => Awaitable<HttpVerdict> = fastPath
    ? decideFast
    : decideAsync

  function decide(req: Req, res: ServerResponse): Promise<HttpVerdict> {
    try {
      return Promise.resolve(decideNow(req, res))
    } catch (error) {
      return Promise.reject(error)
    }
  }

  function abortedVerdict(key: string): RejectVerdict {
    return {
      action: 'reject',
      reason: 'aborted',
      status: statusCode,
      decision: undefined,
      headers: [],
      body: { error: limitedError, message: 'The client went away while its request was queued.' },
      retryAfterSeconds: 0,
      key,
    }
  }

  const close = rulesLimiter === undefined ? () => {} : rulesLimiter.close
  return { decide, decideNow, limiter: fixed, rulesLimiter, store, close }
}
