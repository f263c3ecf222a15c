/**
 * @sluice/koa: the Koa middleware, with koa-ratelimit's option names accepted.
 */
import type { Decision, HttpLimitOptions, LegacyHeaderNames, RequestList } from '@sluice/core'
import {
  checkAliasLimit,
  checkAliasMs,
  checkAlias,
  DEFAULT_LEGACY_NAMES,
  invalidOption,
} from '@sluice/core/adapter'
import type { ServerResponse } from 'node:http'
import type { Context } from 'koa'
import { koaMiddleware, type RateLimitMiddleware } from './middleware'

type Awaitable<T> = T | Promise<T>

/** koa-ratelimit's custom header names. */
export interface KoaHeaderNames {
  /** @default 'X-RateLimit-Remaining' */
  remaining?: string
  /** @default 'X-RateLimit-Reset' */
  reset?: string
  /** The limit. @default 'X-RateLimit-Limit' */
  total?: string
}

/** Sluice's options plus koa-ratelimit's names, so moving over is a change of import. */
export interface KoaRateLimitOptions extends HttpLimitOptions<Context, ServerResponse> {
  /** koa-ratelimit alias of `window` (ms). @default 60000 */
  duration?: number
  /** koa-ratelimit alias of `limit`. @default 100 */
  max?: number | ((ctx: Context) => Awaitable<number>)
  /** koa-ratelimit alias of `key`; `false` lets the request through unlimited. @default the client IP */
  id?: (ctx: Context) => Awaitable<string | false | undefined>
  /** Aliases of `allowList`. @default undefined */
  allowlist?: RequestList<Context>
  whitelist?: RequestList<Context>
  /** Aliases of `denyList` (403). @default undefined */
  blocklist?: RequestList<Context>
  blacklist?: RequestList<Context>
  /** Renames the legacy headers. @default { remaining: 'X-RateLimit-Remaining', reset: 'X-RateLimit-Reset', total: 'X-RateLimit-Limit' } */
  headers?: KoaHeaderNames
  /** No rate-limit headers at all (legacy, standard and Retry-After). @default false */
  disableHeader?: boolean
  /** koa-ratelimit alias of `message`. @default 'Too many requests, please try again in N seconds.' */
  errorMessage?: HttpLimitOptions<Context>['message']
  /** koa-ratelimit alias of `statusCode`. @default 429 */
  status?: number
  /** Reject with `ctx.throw(status, message, { headers })`, so upstream error middleware answers. @default false */
  throw?: boolean
  /** Answers rate-limited requests itself (not ban or deny 403s). @default undefined */
  handler?: (ctx: Context, decision: Decision) => Awaitable<void>
}

function alias<T>(
  result: Record<string, unknown>,
  canonical: string,
  names: ReadonlyArray<readonly [string, T | undefined]>,
): void {
  for (const [name, value] of names) {
    if (value === undefined) continue
    checkAlias(name, value, canonical, result[canonical])
    result[canonical] = value
  }
}

/** Maps koa-ratelimit names onto Sluice's, once. */
function normalize(options: KoaRateLimitOptions): {
  core: HttpLimitOptions<Context>
  names: LegacyHeaderNames
} {
  const {
    duration,
    max,
    id,
    allowlist,
    whitelist,
    blocklist,
    blacklist,
    headers,
    disableHeader,
    errorMessage,
    status,
    throw: _throw,
    handler: _handler,
    ...rest
  } = options
  const core: Record<string, unknown> = { ...rest }
  checkAliasMs(duration, 'duration')
  checkAliasLimit(max, 'max')
  alias(core, 'window', [['duration', duration]])
  alias(core, 'limit', [['max', max]])
  alias(core, 'key', [['id', id]])
  alias(core, 'allowList', [
    ['allowlist', allowlist],
    ['whitelist', whitelist],
  ])
  alias(core, 'denyList', [
    ['blocklist', blocklist],
    ['blacklist', blacklist],
  ])
  alias(core, 'message', [['errorMessage', errorMessage]])
  alias(core, 'statusCode', [['status', status]])
  if (disableHeader !== undefined && typeof disableHeader !== 'boolean') {
    invalidOption('disableHeader', disableHeader, 'true or false')
  }
  if (disableHeader) {
    core.legacyHeaders = false
    core.standardHeaders = false
    core.retryAfterHeader = false
  }
  if (headers !== undefined && (typeof headers !== 'object' || headers === null)) {
    invalidOption('headers', headers, 'an object { remaining, reset, total }')
  }
  const names: LegacyHeaderNames = {
    limit: headers?.total ?? DEFAULT_LEGACY_NAMES.limit,
    remaining: headers?.remaining ?? DEFAULT_LEGACY_NAMES.remaining,
    reset: headers?.reset ?? DEFAULT_LEGACY_NAMES.reset,
    retryAfter: DEFAULT_LEGACY_NAMES.retryAfter,
  }
  return { core: core as HttpLimitOptions<Context>, names }
}

/**
 * Koa (2 and 3) rate-limit middleware. Options are checked here, once; a bad one throws a
 * ConfigError naming it.
 */
export function rateLimit(options: KoaRateLimitOptions = {}): RateLimitMiddleware {
  const { core, names } = normalize(options)
  const handler = options.handler
  if (handler !== undefined && typeof handler !== 'function') {
    invalidOption('handler', handler, 'a function')
  }
  const throws = options.throw ?? false
  if (typeof throws !== 'boolean') invalidOption('throw', throws, 'true or false')
  return koaMiddleware(core, { names, handler, throws, textBody: false })
}

export default rateLimit
export type { RateLimitMiddleware } from './middleware'
export { ipKey, headerKey, userKey, combineKeys } from '@sluice/core'
export type { Decision, HttpLimitOptions, StandardHeadersDraft } from '@sluice/core'
