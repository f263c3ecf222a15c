/**
 * Owns koa-ratelimit's options as the compatibility entry takes them: their documentation and
 * defaults (the peer's), checked once and mapped onto the Koa middleware's Sluice options.
 */
import type { Decision, Store } from '@sluice/core'
import type { HttpLimitOptions, LegacyHeaderNames } from '@sluice/http'
import { checkBoolean, checkFunction, declareOptions, invalidOption } from '@sluice/core/adapter'
import { checkAliasLimit, checkAliasMs, checkHeaderName, DEFAULT_LEGACY_NAMES } from '@sluice/http'
import type { Context } from 'koa'
import type { KoaAnswer } from '../middleware'
import { durationWords } from './duration-words'
import { MapStore } from './map-store'
import { isRedisDb, redisStoreOn, type RedisDb } from './redis-db'

type Awaitable<T> = T | Promise<T>

/** koa-ratelimit's options, with its defaults. */
export interface RatelimitOptions {
  /**
   * Where counts live: `'memory'` (a Map) or `'redis'` (an ioredis client in `db`). Unset, it
   * follows `db`: a Map is memory, a Redis client is redis, no `db` is Sluice's bounded MemoryStore.
   * @default inferred from `db`
   */
  driver?: 'memory' | 'redis'
  /**
   * A Map (driver 'memory'; `db.clear()` forgets every client) or an ioredis client (driver
   * 'redis'; needs `@sluice/redis` installed). Memory counts fixed windows from each client's
   * first request, Redis a sliding log, as koa-ratelimit does.
   * @default undefined (a MemoryStore of the middleware's own)
   */
  db?: Map<string, unknown> | RedisDb
  /** Window length in ms. @default 3600000 (1 hour) */
  duration?: number
  /** Requests per `duration` and client. @default 2500 */
  max?: number
  /**
   * The client's key; `false` lets the request through unlimited, `undefined` falls back to the
   * client IP (never one bucket for every such request).
   * @default ctx => ctx.ip
   */
  id?: (ctx: Context) => Awaitable<string | false | undefined>
  /** Names of the headers. @default { remaining: 'X-RateLimit-Remaining', reset: 'X-RateLimit-Reset', total: 'X-RateLimit-Limit' } */
  headers?: { remaining?: string; reset?: string; total?: string }
  /** Requests for which it returns true pass unlimited, without headers. @default undefined */
  whitelist?: (ctx: Context) => Awaitable<boolean>
  /** Requests for which it returns true are refused with `ctx.throw(403, 'Forbidden')`. @default undefined */
  blacklist?: (ctx: Context) => Awaitable<boolean>
  /** No X-RateLimit-* headers (rejections still carry Retry-After). @default false */
  disableHeader?: boolean
  /** The text body of a rejection. @default 'Rate limit exceeded, retry in <wait in words>.' */
  errorMessage?: string
  /** Status of a rejection. @default 429 */
  status?: number
  /** Reject with `ctx.throw(status, message, { headers })`, so upstream error middleware answers. @default false */
  throw?: boolean
  /** First part of every key in the store (`<namespace>:<id>`). @default 'limit' */
  namespace?: string
  /**
   * koa-ratelimit 6: called for every rate-limited request once its answer is set (status,
   * body, headers), so it may log it or change the answer; with `throw`, before the throw.
   * @default undefined
   */
  onLimited?: (ctx: Context) => void
}

/** The options resolved: the middleware's Sluice options and answer, and the deny check. */
export interface ResolvedRatelimit {
  readonly core: HttpLimitOptions<Context>
  readonly answer: KoaAnswer
  readonly blacklist: ((ctx: Context) => Awaitable<boolean>) | undefined
}

function checkNamespace(namespace: unknown): void {
  if (typeof namespace !== 'string' || namespace === '' || /[{}]/.test(namespace)) {
    invalidOption('namespace', namespace, 'a non-empty string without braces')
  }
}

/**
 * koa-ratelimit's options, declared once, in the order they are checked; `driver` and `db` are
 * checked together (storeOf), `status` by the pipeline.
 */
export const RATELIMIT_OPTIONS = declareOptions<RatelimitOptions>('koa-ratelimit', {
  duration: {
    doc: 'window length in ms',
    default: 3_600_000,
    check: (duration) => checkAliasMs(duration, 'duration'),
  },
  max: {
    doc: 'requests per `duration` and client',
    default: 2500,
    check: (max) => {
      if (typeof max === 'function') invalidOption('max', max, 'a positive integer')
      checkAliasLimit(max, 'max')
    },
  },
  id: { doc: "the client's key; false lets the request through", check: checkFunction },
  whitelist: { doc: 'requests it returns true for pass unlimited', check: checkFunction },
  blacklist: { doc: 'requests it returns true for are refused with 403', check: checkFunction },
  onLimited: { doc: 'called for every rate-limited request', check: checkFunction },
  errorMessage: {
    doc: 'the text body of a rejection',
    check: (message) => {
      if (typeof message !== 'string') invalidOption('errorMessage', message, 'a string')
    },
  },
  namespace: {
    doc: 'first part of every key in the store',
    default: 'limit',
    check: checkNamespace,
    orNull: true,
  },
  disableHeader: { doc: 'no X-RateLimit-* headers', default: false, check: checkBoolean },
  throw: { doc: 'reject with ctx.throw', default: false, check: checkBoolean },
  driver: { doc: "where counts live: 'memory' or 'redis'; default: inferred from `db`" },
  db: { doc: 'a Map or an ioredis client' },
  headers: { doc: 'names of the headers' },
  status: { doc: 'status of a rejection', default: 429, check: checkStatus },
})

/** The store and the algorithm the driver counts with (the peer's: see `db`). */
function storeOf(
  driver: unknown,
  db: unknown,
  namespace: string,
): Pick<HttpLimitOptions<Context>, 'store' | 'algorithm' | 'anchor'> {
  if (driver !== undefined && driver !== 'memory' && driver !== 'redis') {
    invalidOption('driver', driver, "'memory' or 'redis'")
  }
  const perKeyWindows = { algorithm: 'fixed-window', anchor: 'first-request' } as const
  if (db === undefined) {
    if (driver === 'redis') invalidOption('db', db, "an ioredis client when driver is 'redis'")
    return perKeyWindows
  }
  if (db instanceof Map) {
    if (driver === 'redis') invalidOption('db', db, "an ioredis client when driver is 'redis'")
    const store: Store = new MapStore(db as Map<string, unknown>, namespace)
    return { ...perKeyWindows, store }
  }
  if (!isRedisDb(db)) invalidOption('db', db, 'a Map or an ioredis client')
  if (driver === 'memory') invalidOption('db', db, "a Map when driver is 'memory'")
  return { algorithm: 'sliding-log', store: redisStoreOn(db, namespace) }
}

/** koa-ratelimit's `status`, checked under its own name (the pipeline's is `statusCode`). */
function checkStatus(value: unknown, option: string): void {
  if (!Number.isInteger(value) || (value as number) < 400 || (value as number) > 599) {
    invalidOption(option, value, 'an HTTP error status (400-599)')
  }
}

function namesOf(headers: unknown): LegacyHeaderNames {
  if (headers === undefined) return DEFAULT_LEGACY_NAMES
  if (typeof headers !== 'object' || headers === null) {
    invalidOption('headers', headers, 'an object { remaining, reset, total }')
  }
  const { remaining, reset, total } = headers as Record<string, unknown>
  // Checked here under koa-ratelimit's names: the pipeline would name its own (`limit`).
  for (const [name, value] of Object.entries({ remaining, reset, total })) {
    if (value !== undefined) checkHeaderName(value, `headers.${name}`)
  }
  return {
    limit: (total as string | undefined) ?? DEFAULT_LEGACY_NAMES.limit,
    remaining: (remaining as string | undefined) ?? DEFAULT_LEGACY_NAMES.remaining,
    reset: (reset as string | undefined) ?? DEFAULT_LEGACY_NAMES.reset,
    retryAfter: DEFAULT_LEGACY_NAMES.retryAfter,
  }
}

/**
 * koa-ratelimit's default message: the wait in words. The peer measures the wait in µs and
 * truncates it to ms, so it is always under the window: one ms less than the whole-ms wait
 * (never the full window, even for a request in the same ms as the window's first).
 */
function defaultMessage(_ctx: Context, decision: Decision): string {
  return `Rate limit exceeded, retry in ${durationWords(Math.max(0, decision.retryAfterMs - 1))}.`
}

/** Checks koa-ratelimit's options once (a ConfigError names a bad one) and maps them. */
export function resolveRatelimit(options: RatelimitOptions): ResolvedRatelimit {
  if (options === null || typeof options !== 'object')
    invalidOption('options', options, 'an object')
  for (const name of Object.keys(options)) {
    if (!RATELIMIT_OPTIONS.names.includes(name))
      invalidOption(
        name,
        options[name as keyof RatelimitOptions],
        'unset (not a koa-ratelimit option)',
      )
  }
  const given = RATELIMIT_OPTIONS.resolve(options)
  const { id, whitelist, blacklist, errorMessage, status, onLimited } = given
  const namespace = given.namespace!
  const core: HttpLimitOptions<Context> = {
    ...storeOf(given.driver, given.db, namespace),
    limit: given.max,
    window: given.duration,
    // koa-ratelimit keys by ctx.ip as is: no IPv6 grouping.
    ipv6Subnet: false,
    key: id,
    allowList: whitelist,
    statusCode: status,
    message: errorMessage ?? defaultMessage,
    legacyHeaders: !given.disableHeader,
    retryAfterHeader: true,
  }
  const answer: KoaAnswer = {
    names: namesOf(given.headers),
    handler: undefined,
    throws: given.throw!,
    textBody: true,
    // koa-ratelimit's rejections carry Retry-After only.
    omitWhenRejected: [DEFAULT_LEGACY_NAMES.retryAfter.toLowerCase()],
    afterLimited: onLimited,
  }
  return { core, answer, blacklist }
}
