/**
 * Owns resolving an adapter's options, once, at start-up: every check (a bad option throws a
 * ConfigError naming it and its value) and every default, into one ResolvedHttp the per-request
 * pipeline reads and nothing else does.
 */
import {
  type Clock,
  buildLimiter,
  createLimiter,
  DEFAULT_ALGORITHM,
  type DirectConsume,
  type Limiter,
  invalidOption,
  checkPositiveInteger,
  checkWholeNumber,
  type LimiterOptions,
  METER_ALGORITHMS,
  listNames,
  MemoryStore,
  monotonicClock,
  systemClock,
  type Store,
} from '@sluice/core/web'
import type { DescriptorEntry } from './rules/compile'
import type { RulesLimiter, RulesLimiterOptions } from './rules/limiter'
import { checkBoolean, checkFunction, checkQueue, compileList, RULES_EXCLUDE } from './checks'
import {
  checkStandardHeaders,
  createHeaderWriter,
  DEFAULT_LEGACY_NAMES,
  type StandardHeadersDraft,
} from './headers'
import { checkMaxDelayMs, checkMaxHolds, Holds } from './holds'
import { checkBadKeyMode, createBadKeyHandler } from './key-result'
import { checkIpv6Subnet, ipKey, ipKeyOf, type RequestLike, type Logger } from './keys'
import { ProxyWarnings } from './proxy-warnings'
import { refusalsOf, type Tiers, tierLimiters } from './per-request'
import type { RefusalCounter } from './refusals'
import { createRejections, type Rejections } from './rejections'
import { checkSfStringText } from './structured'
import { HTTP_OPTIONS } from './options'
import {
  type Awaitable,
  type FrameworkDefaults,
  type HttpLimitOptions,
  type ResponseLike,
} from './types'

/** Builds the rules limiter of `rules`: what file paths and documents become differs by build. */
export type RulesLimiterFactory = (options: RulesLimiterOptions) => RulesLimiter

/** Which limiter counts a request: a fixed one, one per tier, or the rules. */
export interface ResolvedLimiters<Req> {
  readonly fixed: Limiter | undefined
  /** The fixed limiter's consume, answered at once on an in-process store (see buildLimiter). */
  readonly fixedDirect: DirectConsume | undefined
  /** Per-tier limits (`limit` or `window` a function): the (cached) tier of a request. */
  readonly tiers: Tiers<Req> | undefined
  readonly rules:
    | {
        limiter: RulesLimiter
        descriptors: (req: Req) => Awaitable<readonly DescriptorEntry[]>
      }
    | undefined
  readonly clock: Clock
}

/** The options as the pipeline reads them: checked, defaulted and compiled. */
export interface ResolvedHttp<
  Req extends RequestLike,
  Res extends ResponseLike,
> extends ResolvedLimiters<Req> {
  readonly logger: Logger
  readonly store: Store
  /** `queue.maxWaitMs`: undefined when requests are not queued. */
  readonly maxWaitMs: number | undefined
  readonly cost: number | ((req: Req) => Awaitable<number>)
  readonly skipSuccessful: boolean
  readonly skipFailed: boolean
  /** Either skip option: charges may be given back when the response ends. */
  readonly refunds: boolean
  readonly writeHeaders: ReturnType<typeof createHeaderWriter>
  readonly key: HttpLimitOptions<Req>['key']
  readonly badKey: ReturnType<typeof createBadKeyHandler>
  readonly keyByIp: (req: Req) => string
  readonly skip: HttpLimitOptions<Req>['skip']
  readonly inAllowList: ((req: Req, key: string) => Awaitable<boolean>) | undefined
  readonly inDenyList: ((req: Req, key: string) => Awaitable<boolean>) | undefined
  readonly onLimited: HttpLimitOptions<Req>['onLimited']
  /** Each key's rejections in a row (`countRefusals`, `ban`, `backoff`); undefined when not counted. */
  readonly refusals: RefusalCounter | undefined
  readonly backoff: HttpLimitOptions<Req>['backoff']
  readonly requestWasSuccessful: HttpLimitOptions<Req, Res>['requestWasSuccessful']
  readonly holds: Holds
  readonly rejections: Rejections<Req>
  readonly proxy: ProxyWarnings<Req>
  readonly resetStyle: FrameworkDefaults<Req>['resetStyle']
}

/**
 * An adapter's default clock, read on every decision: a server makes one decision per request,
 * each in an event-loop turn of its own, where a turn clock's cache saves no read and costs a
 * promise reaction per request. Monotonic on an in-process store, the wall clock on a shared
 * one (processes must agree on it), as a limiter's own defaults.
 */
function requestClock(store: Store): Clock {
  return store.local === true ? monotonicClock : systemClock
}

/** The limiter options every limiter of this adapter shares. */
function baseOptions<Req>(
  options: HttpLimitOptions<Req>,
  store: Store,
  logger: Logger,
): LimiterOptions {
  return {
    algorithm: options.algorithm,
    burst: options.burst,
    precision: options.precision,
    anchor: options.anchor,
    throttle: options.throttle,
    store,
    clock: options.clock ?? requestClock(store),
    onStoreError: options.onStoreError,
    shadow: options.shadow,
    timeoutMs: options.timeoutMs,
    breaker: options.breaker,
    maxInFlight: options.maxInFlight,
    logger,
    prefix: options.prefix,
    onDecision: options.onDecision,
    concurrency: options.concurrency,
    topRefused: options.topRefused,
  }
}

function resolveRules<Req>(
  options: HttpLimitOptions<Req>,
  store: Store,
  logger: Logger,
  createRulesLimiter: RulesLimiterFactory,
): NonNullable<ResolvedLimiters<Req>['rules']> {
  for (const name of RULES_EXCLUDE) {
    if (options[name] !== undefined) {
      invalidOption(name, options[name], 'unset when `rules` is given (the rules set the limits)')
    }
  }
  const descriptors = options.descriptors
  if (descriptors === undefined) {
    invalidOption(
      'descriptors',
      descriptors,
      "a function (req) => [['route', path], ['user', id], ...] when `rules` is given",
    )
  }
  if (options.onStoreError !== undefined && typeof options.onStoreError !== 'string') {
    invalidOption('onStoreError', options.onStoreError, "'throw', 'allow' or 'deny' with `rules`")
  }
  const limiter = createRulesLimiter({
    rules: options.rules!,
    store,
    clock: options.clock ?? requestClock(store),
    prefix: options.prefix,
    onStoreError: options.onStoreError as 'throw' | 'allow' | 'deny' | undefined,
    timeoutMs: options.timeoutMs,
    breaker: options.breaker,
    maxInFlight: options.maxInFlight,
    logger,
    onDecision: options.onDecision,
  })
  return { limiter, descriptors }
}

function resolveLimiters<Req>(
  options: HttpLimitOptions<Req>,
  base: LimiterOptions,
  createRulesLimiter: RulesLimiterFactory,
): ResolvedLimiters<Req> {
  const { limit, descriptors } = options
  checkFunction(descriptors, 'descriptors')
  let built: ReturnType<typeof buildLimiter> | undefined
  let tiers: ResolvedLimiters<Req>['tiers']
  let rules: ResolvedLimiters<Req>['rules']
  if (base.concurrency !== undefined && options.queue !== undefined) {
    invalidOption(
      'queue',
      options.queue,
      'unset with `concurrency` (wait for a slot with concurrency.maxWaitMs)',
    )
  }
  if (options.rules !== undefined) {
    if (base.concurrency !== undefined) {
      invalidOption('concurrency', base.concurrency, 'unset when `rules` is given')
    }
    rules = resolveRules(options, base.store!, base.logger!, createRulesLimiter)
  } else if (descriptors !== undefined) {
    invalidOption('descriptors', descriptors, 'unset unless `rules` is given')
  } else if (options.limits !== undefined) {
    if (limit !== undefined) invalidOption('limit', limit, 'unset when `limits` is given')
    if (typeof options.window === 'function')
      invalidOption('window', options.window, 'a duration when `limits` is given')
    built = buildLimiter({ ...base, limits: options.limits, window: options.window })
  } else if (typeof limit === 'function' || typeof options.window === 'function') {
    // Validates everything but the functions now; each tier is checked when first seen.
    createLimiter({
      ...base,
      limit: typeof limit === 'function' ? 1 : (limit ?? 100),
      window: typeof options.window === 'function' ? '1m' : (options.window ?? '1m'),
    })
    tiers = tierLimiters(base, limit, options.window)
  } else if (
    base.concurrency !== undefined &&
    limit === undefined &&
    options.window === undefined
  ) {
    built = buildLimiter(base) // concurrency only: no rate limit
  } else {
    built = buildLimiter({ ...base, limit: limit ?? 100, window: options.window ?? '1m' })
  }
  const fixed = built?.limiter
  const clock = (rules?.limiter ?? fixed ?? createLimiter({ ...base, limit: 1, window: 1000 }))
    .clock
  return { fixed, fixedDirect: built?.consumeDirect, tiers, rules, clock }
}

/** `queue` needs a meter algorithm: only they can reserve a slot. */
function checkQueueAlgorithm<Req>(
  options: HttpLimitOptions<Req>,
  limiters: ResolvedLimiters<Req>,
): number | undefined {
  const maxWaitMs = checkQueue(options.queue)
  if (maxWaitMs === undefined || limiters.rules !== undefined) return maxWaitMs
  const { fixed } = limiters
  const counter = fixed?.policies.find((p) => !METER_ALGORITHMS.has(p.algorithm))
  const algorithm =
    fixed === undefined ? (options.algorithm ?? DEFAULT_ALGORITHM) : counter?.algorithm
  if (algorithm !== undefined && !METER_ALGORITHMS.has(algorithm)) {
    invalidOption(
      'algorithm',
      algorithm,
      `a meter algorithm (${listNames([...METER_ALGORITHMS], "'")}) when \`queue\` is given (only they can reserve a slot)`,
    )
  }
  return maxWaitMs
}

function checkAnswerOptions<Req>(options: HttpLimitOptions<Req>): void {
  const { cost, statusCode, ban, message } = options
  if (cost !== undefined && typeof cost !== 'function') checkPositiveInteger(cost, 'cost')
  if (
    statusCode !== undefined &&
    (!Number.isInteger(statusCode) || statusCode < 400 || statusCode > 599)
  ) {
    invalidOption('statusCode', statusCode, 'an HTTP error status (400-599)')
  }
  if (ban !== undefined) {
    checkWholeNumber(ban, 'ban', 'a whole number of rejections (0 bans at the first)')
  }
  if (
    message !== undefined &&
    typeof message !== 'string' &&
    typeof message !== 'function' &&
    (typeof message !== 'object' || message === null)
  ) {
    invalidOption('message', message, 'a string, an object or a function')
  }
}

function checkLogger(logger: unknown): Logger {
  if (
    typeof logger !== 'object' ||
    logger === null ||
    typeof (logger as Logger).warn !== 'function'
  ) {
    invalidOption('logger', logger, 'an object with a warn(message) method')
  }
  return logger as Logger
}

/**
 * draft-8 and later write each limit's name as an sf-string: a fixed limit's names are known
 * now, so one an sf-string cannot hold is refused here (rules' names are escaped as written).
 */
function checkPolicyNames(limiter: Limiter | undefined, standard: StandardHeadersDraft | false) {
  if (
    limiter === undefined ||
    standard === false ||
    standard === 'draft-6' ||
    standard === 'draft-7'
  )
    return
  limiter.policies.forEach((policy, i) =>
    checkSfStringText(policy.name, limiter.policies.length === 1 ? 'name' : `limits[${i}].name`),
  )
}

/** The default key: `req.ip`, or the framework's `clientIp` for requests without one. */
function ipKeyFor<Req extends RequestLike>(
  clientIp: FrameworkDefaults<Req>['clientIp'],
  ipv6Subnet: unknown,
  logger: Logger,
): (req: Req) => string {
  const options = { ipv6Subnet: checkIpv6Subnet(ipv6Subnet ?? 64), logger }
  if (clientIp === undefined) return ipKey(options)
  const keyOf = ipKeyOf(options)
  return (req) => keyOf(clientIp(req))
}

export function resolveHttpOptions<Req extends RequestLike, Res extends ResponseLike>(
  options: HttpLimitOptions<Req, Res>,
  defaults: FrameworkDefaults<Req>,
  createRulesLimiter: RulesLimiterFactory,
): ResolvedHttp<Req, Res> {
  if (options === null || typeof options !== 'object')
    invalidOption('options', options, 'an object')
  // Names, the options checked on their own, and the declared defaults.
  const given = HTTP_OPTIONS.resolve(
    options as unknown as HttpLimitOptions,
    `${defaults.framework} rateLimit`,
  )
  const logger = checkLogger(options.logger ?? console)
  const store = options.store ?? new MemoryStore()
  // The helpers read no `requestWasSuccessful`, the one option typed by the response.
  const common = options as unknown as HttpLimitOptions<Req>
  const limiters = resolveLimiters(common, baseOptions(common, store, logger), createRulesLimiter)
  const maxWaitMs = checkQueueAlgorithm(common, limiters)
  const standard = checkStandardHeaders(options.standardHeaders)
  checkPolicyNames(limiters.fixed, standard)
  checkAnswerOptions(common)
  const skipSuccessful = checkBoolean(options.skipSuccessfulRequests, 'skipSuccessfulRequests')
  const skipFailed = checkBoolean(options.skipFailedRequests, 'skipFailedRequests')
  return {
    ...limiters,
    logger,
    store,
    maxWaitMs,
    cost: given.cost as ResolvedHttp<Req, Res>['cost'],
    skipSuccessful,
    skipFailed,
    refunds: skipSuccessful || skipFailed,
    writeHeaders: createHeaderWriter({
      legacy:
        options.legacyHeaders === false ? false : (defaults.legacyNames ?? DEFAULT_LEGACY_NAMES),
      standard,
      resetStyle: defaults.resetStyle,
      retryAfter: given.retryAfterHeader!,
      omitWhenAllowed: defaults.omitWhenAllowed,
      omitWhenRejected: defaults.omitWhenRejected,
    }),
    key: options.key,
    badKey: createBadKeyHandler(checkBadKeyMode(options.onBadKey), logger),
    keyByIp: ipKeyFor(defaults.clientIp, options.ipv6Subnet, logger),
    skip: options.skip,
    inAllowList: compileList(options.allowList, 'allowList', defaults.clientIp),
    inDenyList: compileList(options.denyList, 'denyList', defaults.clientIp),
    onLimited: options.onLimited,
    refusals: refusalsOf(common, limiters.rules !== undefined),
    backoff: options.backoff,
    requestWasSuccessful: options.requestWasSuccessful,
    holds: new Holds(checkMaxHolds(options.maxHolds), checkMaxDelayMs(options.maxDelayMs)),
    rejections: createRejections<Req>({
      statusCode: given.statusCode!,
      message: options.message,
      ban: options.ban,
      customRejection: defaults.customRejection === true,
    }),
    proxy: new ProxyWarnings(defaults, logger, defaults.keysByIp ?? options.key === undefined),
    resetStyle: defaults.resetStyle,
  }
}
