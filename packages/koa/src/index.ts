/**
 * @sluice/koa: the Koa middleware, with koa-ratelimit's option names accepted.
 */
import {
  type Decision,
  type HttpLimitOptions,
  type HttpVerdict,
  type LegacyHeaderNames,
  type ProxyTrust,
  type RejectVerdict,
  type RequestList,
} from '@sluice/core'
import {
  checkAliasLimit,
  checkAliasMs,
  checkAlias,
  createHttpLimiter,
  DEFAULT_LEGACY_NAMES,
  invalidOption,
  isPromise,
} from '@sluice/core/adapter'
import type { Context, Middleware, Next } from 'koa'

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
export interface KoaRateLimitOptions extends HttpLimitOptions<Context> {
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

/** The middleware, plus `close()`: stops the rules file watcher it opened (`rules` as a path). */
export type RateLimitMiddleware = Middleware & {
  /**
   * Stops what the middleware started: the watcher of a `rules` file path (a RulesWatcher or
   * RuleSet you passed stays yours). Call it when the server shuts down. Idempotent.
   */
  close(): void
}

function trustOf(ctx: Context): ProxyTrust {
  if (!ctx.app.proxy) return 'none'
  return ctx.app.maxIpsCount > 0 ? 'some' : 'all'
}

const PROXY_HINT = 'set app.proxy = true and app.maxIpsCount = 1 (one proxy hop).'

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
  const limiter = createHttpLimiter<Context>(core, {
    framework: 'Koa',
    resetStyle: 'epoch',
    proxyTrust: trustOf,
    peerAddress: (ctx) => ctx.req.socket?.remoteAddress,
    proxyHint: PROXY_HINT,
    legacyNames: names,
    customRejection: handler !== undefined,
  })

  /**
   * A request decided at once and admitted goes straight on (`next()`'s promise is the
   * middleware's); everything else goes through `apply`'s promise, as before.
   */
  function sluiceRateLimit(ctx: Context, next: Next): Promise<unknown> {
    let verdict: HttpVerdict | Promise<HttpVerdict>
    try {
      verdict = limiter.decideNow(ctx, ctx.res)
      if (!isPromise(verdict)) {
        if (verdict.action === 'pass') return Promise.resolve(next())
        if (verdict.action === 'allow') {
          ctx.state.rateLimit = verdict.decision
          for (const [name, value] of verdict.headers) ctx.set(name, value)
          return Promise.resolve(next())
        }
        // A rejection decided at once is answered at once, without apply's async frame.
        if (!throws && !(verdict.reason === 'limited' && handler !== undefined)) {
          ctx.state.rateLimit = verdict.decision
          refuse(ctx, verdict)
          return Promise.resolve()
        }
      }
    } catch (error) {
      return Promise.reject(error)
    }
    return apply(ctx, next, verdict)
  }

  // Store failures (onStoreError 'throw') reject here and reach Koa's error handling: a 500.
  async function apply(ctx: Context, next: Next, pending: Awaitable<HttpVerdict>) {
    const verdict = await pending
    if (verdict.action === 'pass') return next()
    ctx.state.rateLimit = verdict.decision
    if (verdict.action === 'allow') {
      for (const [name, value] of verdict.headers) ctx.set(name, value)
      return next()
    }
    if (verdict.reason === 'limited' && handler !== undefined) {
      for (const [name, value] of verdict.headers) ctx.set(name, value)
      return handler(ctx, verdict.decision!)
    }
    if (throws) {
      // Koa's error handling clears headers set on ctx, so they travel on the error.
      const body = verdict.body as { message?: unknown }
      const message = typeof body?.message === 'string' ? body.message : JSON.stringify(body)
      ctx.throw(verdict.status, message, { headers: Object.fromEntries(verdict.headers) })
    }
    refuse(ctx, verdict)
  }

  /** Answers a rejection: its headers, status and JSON body. */
  function refuse(ctx: Context, verdict: RejectVerdict): void {
    for (const [name, value] of verdict.headers) ctx.set(name, value)
    ctx.status = verdict.status
    ctx.body = verdict.body
  }
  return Object.assign(sluiceRateLimit, { close: () => limiter.close() })
}

export default rateLimit
export { ipKey, headerKey, userKey, combineKeys } from '@sluice/core'
export type { Decision, HttpLimitOptions, StandardHeadersDraft } from '@sluice/core'
