/**
 * @sluice/koa: the Koa middleware, with Sluice's option names (koa-ratelimit's are kept by
 * `@sluice/koa/compat`).
 */
import type { Decision } from '@sluice/core'
import type { HttpLimitOptions } from '@sluice/http'
import { invalidOption } from '@sluice/core/adapter'
import { DEFAULT_LEGACY_NAMES, refusePeerNames } from '@sluice/http'
import type { ServerResponse } from 'node:http'
import type { Context } from 'koa'
import { koaMiddleware, type RateLimitMiddleware } from './middleware'

type Awaitable<T> = T | Promise<T>

/** Sluice's HTTP options plus the Koa middleware's own. */
export interface KoaRateLimitOptions extends HttpLimitOptions<Context, ServerResponse> {
  /** Reject with `ctx.throw(status, message, { headers })`, so upstream error middleware answers. @default false */
  throw?: boolean
  /** Answers rate-limited requests itself (not ban or deny 403s). @default undefined */
  handler?: (ctx: Context, decision: Decision) => Awaitable<void>
}

/** koa-ratelimit's names for Sluice's options: refused here, kept by the compat entry. */
const KOA_RATELIMIT_NAMES = {
  peer: 'koa-ratelimit',
  compatEntry: '@sluice/koa/compat',
  names: {
    duration: '`window`',
    max: '`limit`',
    id: '`key`',
    allowlist: '`allowList`',
    whitelist: '`allowList`',
    blocklist: '`denyList`',
    blacklist: '`denyList`',
    errorMessage: '`message`',
    status: '`statusCode`',
    disableHeader: '`legacyHeaders: false, standardHeaders: false, retryAfterHeader: false`',
    headers: '`legacyHeaders` (Sluice names them X-RateLimit-Limit, -Remaining and -Reset)',
  },
}

/**
 * Koa (2 and 3) rate-limit middleware. Options are checked here, once; a bad one throws a
 * ConfigError naming it.
 */
export function rateLimit(options: KoaRateLimitOptions = {}): RateLimitMiddleware {
  refusePeerNames(options, KOA_RATELIMIT_NAMES)
  const { throw: _throw, handler: _handler, ...rest } = options
  // koaMiddleware reads no `requestWasSuccessful` response type: the one option typed by it.
  const core = rest as HttpLimitOptions<Context>
  const handler = options.handler
  if (handler !== undefined && typeof handler !== 'function') {
    invalidOption('handler', handler, 'a function')
  }
  const throws = options.throw ?? false
  if (typeof throws !== 'boolean') invalidOption('throw', throws, 'true or false')
  return koaMiddleware(core, {
    names: DEFAULT_LEGACY_NAMES,
    handler,
    throws,
    textBody: false,
  })
}

export default rateLimit
export type { RateLimitMiddleware } from './middleware'
export { ipKey, headerKey, userKey, combineKeys, normalizeIp } from '@sluice/http'
export type { Decision } from '@sluice/core'
export type { HttpLimitOptions, StandardHeadersDraft } from '@sluice/http'
