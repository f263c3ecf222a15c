/**
 * @sluice/fetch: Sluice for Fetch API handlers (`Request` in, `Response` out): Bun.serve,
 * Deno.serve, Cloudflare Workers, Next.js route handlers and middleware, and Node through any
 * Fetch bridge. Built on @sluice/core/web, so nothing of Node's is imported.
 */
import {
  invalidOption,
  type Decision,
  type Limiter,
  type Store,
  type WaitUntil,
} from '@sluice/core/web'
import { type RulesLimiter, type TrustProxy } from '@sluice/http'
import { addressDefaults, addressKey, clientIpReader, platformIp } from './client-ip'
import { createFetchLimiter, type FetchCheck, type FetchLimitOptions } from './limiter'

type Awaitable<T> = T | Promise<T>

const PROXY_HINT =
  "pass trustProxy: 1 (exactly one proxy hop) or your proxy's address or CIDR, e.g. trustProxy: '10.0.0.1'."

/** Options: core's (limit, window, algorithm, key, store, headers...), plus where the client address is. */
export interface FetchRateLimitOptions extends FetchLimitOptions<Request> {
  /**
   * The client address of a request (the default key, and the allow/deny lists). Without it,
   * `request.ip` where the platform sets it; a request with neither is handled as
   * `onMissingAddress` says (never a bucket shared by every such client).
   * @default (request) => request.ip
   */
  ip?: (request: Request) => string | null | undefined
  /**
   * Proxies of yours between the client and the app (Node, Bun or Deno behind nginx, a load
   * balancer): a hop count (`1`: the sender is your one proxy, the client the last
   * X-Forwarded-For entry), or your proxies' addresses and CIDR ranges (`'10.0.0.0/8'`,
   * `'loopback'`). `true` trusts every sender (any client could pick its address): warned about.
   * Not for platforms that name the client in a header of their own (Cloudflare, Vercel): read
   * that header with `ip`. See docs/proxies.md.
   * @default false
   */
  trustProxy?: TrustProxy
}

/** A Fetch handler; the second argument is the limiter's decision (undefined when skipped). */
export type FetchHandler = (
  request: Request,
  rateLimit: Decision | undefined,
) => Awaitable<Response>

/**
 * What hands the platform work that must outlive the response: Cloudflare Workers'
 * ExecutionContext (`ctx`), Next.js middleware's NextFetchEvent (`event`).
 */
export interface WaitUntilContext {
  waitUntil(promise: Promise<unknown>): void
}

/**
 * `limited(request, handler, ctx?)`: the handler's Response with rate-limit headers (those it
 * carries already, from the handler or an inner limiter, are kept), or the refusal. With
 * `concurrency`, the slot is held until the Response's body has been sent (read to its end,
 * errored or cancelled by the client): send the Response it returns.
 *
 * `ctx` (Workers' ExecutionContext, Next.js's NextFetchEvent): on a runtime that cancels I/O
 * still pending once the response is returned, a store call that timed out (the request was
 * answered by `onStoreError`) has its late reply and the refund of its charge kept running
 * with `ctx.waitUntil`; without it they are cut off and the charge stays (docs/edge.md).
 * Default: none (right on Node, Bun and Deno, which keep running).
 */
export interface RateLimited {
  (request: Request, handler: FetchHandler, ctx?: WaitUntilContext): Promise<Response>
  /**
   * The decision and the headers to add, without running a handler; `ctx` as for `limited`. A
   * limiter with `concurrency` rejects with a ConfigError: `check` never sees the response end,
   * so the slot would never be given back (use `limited(request, handler)`).
   */
  check(request: Request, ctx?: WaitUntilContext): Promise<FetchCheck>
  /** The limiter of a fixed limit (undefined for per-tier limits and rules). */
  readonly limiter: Limiter | undefined
  readonly rulesLimiter: RulesLimiter | undefined
  readonly store: Store
  /** Stops what the limiter started (a rules watcher it opened). Idempotent. */
  close(): void
}

/**
 * Rate limits Fetch handlers: `const limited = rateLimit({ limit: 100, window: '1m' })`, then
 * `limited(request, handler)`. Options are checked here, once; a bad one throws a ConfigError.
 */
export function rateLimit(options: FetchRateLimitOptions = {}): RateLimited {
  if (options === null || typeof options !== 'object')
    invalidOption('options', options, 'an object')
  const { ip, trustProxy, ...rest } = options
  const limiter = createFetchLimiter<Request>(rest, {
    framework: 'Fetch',
    ...addressDefaults<Request>({
      peer: clientIpReader(ip, platformIp, 'Fetch'),
      forwardedFor: (request) => request.headers.get('x-forwarded-for') ?? undefined,
      trustProxy,
      proxyHint: PROXY_HINT,
    }),
    signalOf: (request) => request.signal,
    methodOf: (request) => request.method,
  })
  async function sluiceRateLimit(
    request: Request,
    handler: FetchHandler,
    ctx?: WaitUntilContext,
  ): Promise<Response> {
    if (typeof handler !== 'function') {
      invalidOption('handler', handler, 'a function (request) => Response')
    }
    return limiter.handle(request, (decision) => handler(request, decision), waitUntilOf(ctx))
  }
  return Object.assign(sluiceRateLimit, {
    check: async (request: Request, ctx?: WaitUntilContext) =>
      limiter.check(request, waitUntilOf(ctx)),
    limiter: limiter.core.limiter,
    rulesLimiter: limiter.core.rulesLimiter,
    store: limiter.core.store,
    close: () => limiter.core.close(),
  })
}

export default rateLimit

/**
 * `ctx.waitUntil` as the store call takes it (bound: Workers' refuses a detached call), or
 * undefined without a `ctx`. Anything else is a ConfigError naming `ctx`.
 */
function waitUntilOf(ctx: WaitUntilContext | undefined): WaitUntil | undefined {
  if (ctx === undefined) return undefined
  if (typeof ctx !== 'object' || ctx === null || typeof ctx.waitUntil !== 'function') {
    invalidOption(
      'ctx',
      ctx,
      "an object with waitUntil(promise): Workers' ExecutionContext or Next.js's NextFetchEvent",
    )
  }
  return (promise) => ctx.waitUntil(promise)
}

/**
 * The client-address key for `combineKeys`, e.g.
 * `combineKeys(ipKey((r) => r.headers.get('cf-connecting-ip')), headerKey('x-api-key'))`.
 * IPv6 is grouped by `ipv6Subnet` (default 64); a request without an address is handled as
 * `onMissingAddress` says.
 */
export function ipKey(
  ip: (request: Request) => string | null | undefined,
  options: { ipv6Subnet?: number | false } = {},
): (request: Request) => string {
  return addressKey(ip, 'Fetch', options)
}
export { createFetchLimiter } from './limiter'
export type { FetchCheck, FetchLimitOptions, FetchFramework, FetchLimiter } from './limiter'
export {
  addressDefaults,
  addressFrom,
  addressKey,
  clientIpReader,
  CLIENT_IP_FIXES,
  MissingAddressError,
  resetAddressWarnings,
} from './client-ip'
export type { AddressSource, MissingAddressKind, MissingAddressMode } from './client-ip'
export { FetchExchange } from './exchange'
export { ConfigError, SluiceError, StoreError } from '@sluice/core/web'
export { headerKey, userKey, combineKeys, normalizeIp } from '@sluice/http'
export type { Decision, WaitUntil } from '@sluice/core/web'
export type { HttpLimitOptions, StandardHeadersDraft, TrustProxy } from '@sluice/http'
