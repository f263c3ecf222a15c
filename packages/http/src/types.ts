/**
 * Owns the HTTP limiter's public shapes: the options every adapter accepts, what a framework
 * tells the pipeline about itself, and the verdicts the pipeline answers with.
 */
import type {
  Limiter,
  Clock,
  Decision,
  Duration,
  DecisionHook,
  HttpGauges,
  ConcurrencyLimit,
  TopRefusedOptions,
  LimitOptions,
  StoreErrorMode,
  ThrottleMode,
  AlgorithmName,
  WindowAnchor,
  Store,
  BreakerOptions,
  WaitUntil,
} from '@sluice/core/web'
import type { DescriptorEntry } from './rules/compile'
import type { RulesLimiter, RulesSource } from './rules/limiter'
import type { ProxyTrust, ProxyWarningKind } from './proxy-warnings'
import type { HeaderList, LegacyHeaderNames, ResetStyle, StandardHeadersDraft } from './headers'
import type { BadKeyMode, KeyResult } from './key-result'
import type { HttpRequestLike, Logger } from './keys'

export type Awaitable<T> = T | Promise<T>

/** What a rejection answers with: a string (sent as the body's `message`) or a JSON value sent as the body. */
export type RateLimitMessage = string | Record<string, unknown> | readonly unknown[]

/** A list of IPs, CIDR ranges (`10.0.0.0/8`) and keys; or a function of the request and its key. */
export type RequestList<Req> = readonly string[] | ((req: Req, key: string) => Awaitable<boolean>)

/**
 * What the pipeline watches of a response, for refunds and holds: Node's `ServerResponse` fits
 * as is; the Fetch adapter gives a small object of its own. `'close'` comes once, when the
 * response finished or the client went away.
 */
export interface ResponseLike {
  /** True once the whole response was handed over. */
  readonly writableFinished: boolean
  /** True once the connection is gone (nothing more can be sent). */
  readonly destroyed: boolean
  readonly statusCode: number
  once(event: 'close', listener: () => void): unknown
  off(event: 'close', listener: () => void): unknown
}

/** Options every adapter accepts, with the same meaning in Express, Fastify and Koa. */
export interface HttpLimitOptions<Req = HttpRequestLike, Res = ResponseLike> {
  /**
   * Requests per `window`; a function of the request and its key (sync or async) gives per-tier
   * limits (one limiter per distinct limit and window, created on first use and cached). A
   * function's 0 refuses the request, counting nothing.
   * @default 100
   */
  limit?: number | ((req: Req, key: string) => Awaitable<number>)
  /**
   * Window length: ms or `'500ms'`, `'10s'`, `'15m'`, `'1h'`, `'1d'`, `'1 minute'`; or a
   * function of the request and its key giving one (per-tier windows, as with `limit`).
   * @default '1m'
   */
  window?: Duration | ((req: Req, key: string) => Awaitable<Duration>)
  /** @default 'sliding-window' */
  algorithm?: AlgorithmName
  /** Capacity of token-bucket, gcra and leaky-bucket. @default limit */
  burst?: number
  /** sliding-window sub-windows. @default 1 */
  precision?: number
  /** fixed-window: `'clock'` (windows at multiples of the window) or `'first-request'` (each key's own). @default 'clock' */
  anchor?: WindowAnchor
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
  /**
   * Source of time in ms (tests inject a fake one), read on each decision.
   * @default monotonicClock on an in-process store (MemoryStore), systemClock (Date.now()) on a shared one
   */
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
  /** Decides success for the two options above (`res`: Node's response; Fetch's `Response`). @default res.statusCode < 400 */
  requestWasSuccessful?: (req: Req, res: Res) => Awaitable<boolean>
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
   * After this many rejections (429) in a row, a key's further rejections are 403 until it is
   * admitted again or a window has passed since the first. Counted per process (see
   * `countRefusals`). @default undefined (off)
   */
  ban?: number
  /**
   * What a rejection costs the key beyond its refusal: `'restart'` refuses it for a whole window
   * from now (a client that keeps trying stays out), `'double'` for `window × 2^(n-1)` at its
   * n-th rejection in a row (capped at Number.MAX_SAFE_INTEGER ms). The store keeps the wait
   * (`limiter.block`), so every process sees it; the count is per process. Not with `rules`.
   * @default undefined (a refused key may pass as soon as its limit has room)
   */
  backoff?: 'restart' | 'double'
  /**
   * Count each key's rejections in a row, per process (`HttpCheck.refusals` reports them); the
   * count ends when the key is admitted again, or a window after its first rejection.
   * @default true with `ban` or `backoff`, else false
   */
  countRefusals?: boolean
  /** IETF RateLimit fields: `'draft-6'`, `'draft-7'`, `'draft-8'`, `'draft-10'`; `true` means draft-6. @default false */
  standardHeaders?: StandardHeadersDraft | boolean
  /** `X-RateLimit-Limit`, `-Remaining`, `-Reset` and (on rejection) `-Retry-After`. @default true */
  legacyHeaders?: boolean
  /** `Retry-After` on rejections. @default true */
  retryAfterHeader?: boolean
  /** What to do when the store fails: `'throw'` (framework error handling, 500), `'allow'`, `'deny'` or a fallback limiter. @default 'throw' */
  onStoreError?: StoreErrorMode
  /**
   * Decide and report, never refuse: every request is admitted, and `decision.shadow` says what
   * enforcing would have answered (see createLimiter's `shadow`).
   * @default false
   */
  shadow?: boolean
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
   * Requests of one key in flight at once (`5` or `{ concurrency, leaseMs, maxWaitMs, ... }`),
   * beside the rate limits; the slot is released when the response finishes, fails or the
   * client leaves. See docs/concurrency.md.
   * @default undefined
   */
  concurrency?: number | ConcurrencyLimit
  /**
   * Keeps the keys refused most (`limiter.topRefused(n)`, `sluice_top_refused`); see
   * docs/observability.md. Not with `rules`.
   * @default false
   */
  topRefused?: TopRefusedOptions | boolean
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
  /**
   * The client address, for requests without an `ip` (a Fetch `Request`): keys and allow/deny
   * lists read it instead of `req.ip`. It may throw (a request no address can be found for).
   */
  clientIp?: (req: Req) => string | undefined
  /** How to set the trust, quoted in the warning. */
  proxyHint?: string
  /** The X-Forwarded-For field, for requests without a header record (a Hono Context). */
  forwardedFor?: (req: Req) => string | undefined
  /** Gives a proxy warning the adapter's own way (express compat's validation errors). */
  report?: (kind: ProxyWarningKind, message: string) => void
  /** Whether the limiter keys by client address. @default no `key` option was given */
  keysByIp?: boolean
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
export interface HttpLimiter<Req, Res extends ResponseLike = ResponseLike> {
  /**
   * Runs skip, key, lists, the one store call, headers, ban and hold; tracks refunds on `res`.
   * `waitUntil`: the request's hand-over of work that must outlive the response (Workers'
   * `ctx.waitUntil`), given to the store call (core's ConsumeOptions.waitUntil); adapters on
   * runtimes that keep running after the response pass none.
   */
  decide(req: Req, res: Res, waitUntil?: WaitUntil): Promise<HttpVerdict>
  /**
   * `decide` without the promise when none is needed: the verdict itself in the common
   * configuration (in-process store, no async option), else a promise of it. It may throw where
   * `decide` rejects. For adapters' hot paths.
   */
  decideNow(req: Req, res: Res, waitUntil?: WaitUntil): HttpVerdict | Promise<HttpVerdict>
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
  /** Requests held, waiting and holding concurrency slots right now: what `metrics.watch` reads. */
  gauges(): HttpGauges
  /**
   * Reads the request's state without counting it: skip, key and lists as `decide` runs them,
   * then `limiter.peek` under the request's limit. `undefined` for a request `decide` would pass
   * untouched or deny-list. With `rules`: an ERR_SLUICE_UNSUPPORTED error.
   */
  check(req: Req): Promise<HttpCheck | undefined>
}

/** What `check` reads of a request, counting nothing. */
export interface HttpCheck {
  readonly key: string
  /** The key's state under the request's limit, as `limiter.peek` reads it (`remaining` is what is left). */
  readonly decision: Decision
  /** The key's rejections in a row (0 unless refusals are counted: `countRefusals`). */
  readonly refusals: number
}
