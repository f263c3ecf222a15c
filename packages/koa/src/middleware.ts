/**
 * Owns the Koa middleware over core's pipeline: one request's verdict turned into Koa's answer
 * (headers, status and body, `ctx.throw`, or a handler). The main entry and the compatibility
 * entry both build their middleware here, from options each has resolved.
 */
import type { Decision } from '@sluice/core'
import type {
  HeaderList,
  HttpLimitOptions,
  HttpVerdict,
  LegacyHeaderNames,
  ProxyTrust,
  RejectVerdict,
} from '@sluice/http'
import { createRefusalJson, JSON_CONTENT_TYPE } from '@sluice/http'
import { createHttpLimiter } from '@sluice/rules'
import type { Context, Middleware, Next } from 'koa'

type Awaitable<T> = T | Promise<T>

/** The middleware, plus `close()`: stops the rules file watcher it opened (`rules` as a path). */
export type RateLimitMiddleware = Middleware & {
  /**
   * Stops what the middleware started: the watcher of a `rules` file path (a RulesWatcher or
   * RuleSet you passed stays yours). Call it when the server shuts down. Idempotent.
   */
  close(): void
}

/** How rejections are answered, resolved by the entry that builds the middleware. */
export interface KoaAnswer {
  readonly names: LegacyHeaderNames
  /** Answers rate-limited requests itself (not ban or deny 403s). */
  readonly handler: ((ctx: Context, decision: Decision) => Awaitable<void>) | undefined
  /** Reject with `ctx.throw(status, message, { headers })`. */
  readonly throws: boolean
  /** The body of a rejection is its message as text (koa-ratelimit), not the JSON body. */
  readonly textBody: boolean
  /** Lower-case header names left out of rejections. */
  readonly omitWhenRejected?: readonly string[]
  /** Called once a rate-limited request's answer is set (or before it is thrown), so it may change it. */
  readonly afterLimited?: (ctx: Context) => void
}

function trustOf(ctx: Context): ProxyTrust {
  if (!ctx.app.proxy) return 'none'
  return ctx.app.maxIpsCount > 0 ? 'some' : 'all'
}

const PROXY_HINT = 'set app.proxy = true and app.maxIpsCount = 1 (one proxy hop).'

/**
 * The client address as `ctx.request.ip` gives it. With `app.proxy` off, Koa's getter reads the
 * proxy header and builds an array only to answer the socket's address (a thousand
 * instructions a request, bench:instructions): that address is read here directly, unless the
 * request holds a field under a symbol, which is where Koa keeps an address set with
 * `ctx.request.ip = ...` (or one it read before); only the getter reads that field.
 */
function clientIpOf(ctx: Context): string {
  const request = ctx.request
  if (ctx.app.proxy || Object.getOwnPropertySymbols(request).length > 0) return request.ip
  return socketAddress(ctx) || ''
}

/** The address of the socket the request came in on. */
const socketAddress = (ctx: Context): string | undefined => ctx.req.socket?.remoteAddress

/**
 * A verdict's headers on Node's response, as `ctx.set(name, value)` sets a string value (none
 * once the headers are sent), without the arrays Koa's `response.set` builds for every header.
 */
function setHeaders(ctx: Context, headers: HeaderList): void {
  const res = ctx.res
  if (res.headersSent) return
  // Indexed: a for-of with [name, value] cost about 0.1k instructions a request more.
  for (let i = 0; i < headers.length; i++) res.setHeader(headers[i][0], headers[i][1])
}

/** A rejection's message as text: the body's `message`, or the whole body as JSON. */
function messageOf(body: unknown): string {
  const message = (body as { message?: unknown } | undefined)?.message
  return typeof message === 'string' ? message : JSON.stringify(body)
}

/** Koa (2 and 3) rate-limit middleware over options already resolved by an entry. */
export function koaMiddleware(
  core: HttpLimitOptions<Context>,
  answer: KoaAnswer,
): RateLimitMiddleware {
  const { handler, throws, textBody } = answer
  const refusalJson = createRefusalJson(core.message, (verdict) => JSON.stringify(verdict.body))
  const limiter = createHttpLimiter<Context>(core, {
    framework: 'Koa',
    resetStyle: 'epoch',
    proxyTrust: trustOf,
    peerAddress: socketAddress,
    clientIp: clientIpOf,
    proxyHint: PROXY_HINT,
    legacyNames: answer.names,
    omitWhenRejected: answer.omitWhenRejected,
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
      // Not through isPromise: this site's own feedback sees a verdict alone (no `then` lookup).
      if (typeof (verdict as { then?: unknown }).then !== 'function') {
        verdict = verdict as HttpVerdict
        // next() is koa-compose's promise already: returned as it is, not wrapped again.
        if (verdict.action === 'pass') return next()
        if (verdict.action === 'allow') {
          ctx.state.rateLimit = verdict.decision
          setHeaders(ctx, verdict.headers)
          return next()
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
      setHeaders(ctx, verdict.headers)
      return next()
    }
    if (verdict.reason === 'limited' && handler !== undefined) {
      setHeaders(ctx, verdict.headers)
      return handler(ctx, verdict.decision!)
    }
    if (throws) {
      if (verdict.reason === 'limited') answer.afterLimited?.(ctx)
      // Koa's error handling clears headers set on ctx, so they travel on the error.
      ctx.throw(verdict.status, messageOf(verdict.body), {
        headers: Object.fromEntries(verdict.headers),
      })
    }
    refuse(ctx, verdict)
  }

  /**
   * Answers a rejection: its headers, status and body, JSON text (built once per distinct body
   * under a flood, see createRefusalJson) or its message as text. Text, not an object: Koa
   * would look up the type and serialize an object on every 429, more work than deciding it.
   */
  function refuse(ctx: Context, verdict: RejectVerdict): void {
    setHeaders(ctx, verdict.headers)
    ctx.status = verdict.status
    if (textBody) {
      ctx.body = messageOf(verdict.body)
    } else {
      ctx.set('Content-Type', JSON_CONTENT_TYPE)
      ctx.body = refusalJson(verdict) ?? JSON.stringify(verdict.body)
    }
    if (verdict.reason === 'limited') answer.afterLimited?.(ctx)
  }
  return Object.assign(sluiceRateLimit, { close: () => limiter.close() })
}
