/**
 * Owns koa-ratelimit's options as the compatibility entry takes them: their documentation and
 * defaults (the peer's), checked once and mapped onto the Koa middleware's Sluice options.
 */
import type { Decision, Store } from '@sluice/core'
import type { HttpLimitOptions, LegacyHeaderNames } from '@sluice/http'
import { invalidOption } from '@sluice/core/adapter'
import { checkAliasLimit, checkAliasMs, DEFAULT_LEGACY_NAMES } from '@sluice/http'
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

const KNOWN = [
  'driver',
  'db',
  'duration',
  'max',
  'id',
  'headers',
  'whitelist',
  'blacklist',
  'disableHeader',
  'errorMessage',
  'status',
  'throw',
  'namespace',
  'onLimited',
]

/** The options resolved: the middleware's Sluice options and answer, and the deny check. */
export interface ResolvedRatelimit {
  readonly core: HttpLimitOptions<Context>
  readonly answer: KoaAnswer
  readonly blacklist: ((ctx: Context) => Awaitable<boolean>) | undefined
}

function checkFunction(value: unknown, option: string): void {
  if (value !== undefined && typeof value !== 'function') invalidOption(option, value, 'a function')
}

function checkBoolean(value: unknown, option: string): boolean {
  if (value !== undefined && typeof value !== 'boolean')
    invalidOption(option, value, 'true or false')
  return value === true
}

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

function namesOf(headers: unknown): LegacyHeaderNames {
  if (headers === undefined) return DEFAULT_LEGACY_NAMES
  if (typeof headers !== 'object' || headers === null) {
    invalidOption('headers', headers, 'an object { remaining, reset, total }')
  }
  const { remaining, reset, total } = headers as Record<string, unknown>
  for (const [name, value] of Object.entries({ remaining, reset, total })) {
    if (value !== undefined && (typeof value !== 'string' || value === '')) {
      invalidOption(`headers.${name}`, value, 'a header name')
    }
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
    if (!KNOWN.includes(name))
      invalidOption(
        name,
        options[name as keyof RatelimitOptions],
        'unset (not a koa-ratelimit option)',
      )
  }
  const { duration, max, id, whitelist, blacklist, errorMessage, status, onLimited } = options
  checkAliasMs(duration, 'duration')
  if (typeof max === 'function') invalidOption('max', max, 'a positive integer')
  checkAliasLimit(max, 'max')
  for (const [name, value] of Object.entries({ id, whitelist, blacklist, onLimited })) {
    checkFunction(value, name)
  }
  if (errorMessage !== undefined && typeof errorMessage !== 'string') {
    invalidOption('errorMessage', errorMessage, 'a string')
  }
  const namespace = options.namespace ?? 'limit'
  if (typeof namespace !== 'string' || namespace === '' || /[{}]/.test(namespace)) {
    invalidOption('namespace', namespace, 'a non-empty string without braces')
  }
  const disableHeader = checkBoolean(options.disableHeader, 'disableHeader')
  const throws = checkBoolean(options.throw, 'throw')
  const core: HttpLimitOptions<Context> = {
    ...storeOf(options.driver, options.db, namespace),
    limit: max ?? 2500,
    window: duration ?? 3_600_000,
    // koa-ratelimit keys by ctx.ip as is: no IPv6 grouping.
    ipv6Subnet: false,
    key: id,
    allowList: whitelist,
    statusCode: status,
    message: errorMessage ?? defaultMessage,
    legacyHeaders: !disableHeader,
    retryAfterHeader: true,
  }
  const answer: KoaAnswer = {
    names: namesOf(options.headers),
    handler: undefined,
    throws,
    textBody: true,
    // koa-ratelimit's rejections carry Retry-After only.
    omitWhenRejected: [DEFAULT_LEGACY_NAMES.retryAfter.toLowerCase()],
    afterLimited: onLimited,
  }
  return { core, answer, blacklist }
}
