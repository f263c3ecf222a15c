/**
 * @sluice/hono: the Hono middleware, on @sluice/fetch's limiter (core's one pipeline). Option
 * functions (`key`, `skip`, `cost`, `message`...) receive Hono's Context, typed by the app's Env.
 */
import {
  addressDefaults,
  addressFrom,
  addressKey,
  createFetchLimiter,
  MissingAddressError,
  type FetchLimitOptions,
} from '@sluice/fetch'
import { invalidOption, ConfigError, type Decision, type WaitUntil } from '@sluice/core/web'
import { headerKey as requestHeaderKey, type RequestLike, type TrustProxy } from '@sluice/http'
import type { Context, Env, MiddlewareHandler } from 'hono'
import type { GetConnInfo } from 'hono/conninfo'

/** How to find the client address with Hono, per platform, quoted in the messages. */
export const HONO_ADDRESS_FIXES = [
  "rateLimiter({ getConnInfo }) with getConnInfo from 'hono/bun', 'hono/deno', 'hono/cloudflare-workers', 'hono/vercel' or '@hono/node-server/conninfo'",
  'behind your own proxy: getConnInfo and trustProxy (docs/proxies.md)',
  'or a `key` option that never returns undefined (a user id, an API token)',
]

const PROXY_HINT =
  "pass rateLimiter({ getConnInfo, trustProxy: 1 }) (exactly one proxy hop) or your proxy's address or CIDR, e.g. trustProxy: '10.0.0.1'."

/**
 * Sluice's options, with the client address from Hono's connection-info helper of your runtime.
 * `E` is the app's Env: option functions get `Context<E>` (`c.get` knows the app's variables).
 */
export interface HonoRateLimitOptions<E extends Env = Env> extends FetchLimitOptions<Context<E>> {
  /**
   * Hono's `getConnInfo` of your runtime (`hono/bun`, `hono/deno`, `hono/cloudflare-workers`,
   * `hono/vercel`, `@hono/node-server/conninfo`): the client address, for the default key and
   * the allow/deny lists. Required unless `key` or `rules` is given (a ConfigError otherwise).
   * @default undefined
   */
  getConnInfo?: GetConnInfo
  /**
   * Proxies of yours in front of the app (Node, Bun or Deno behind nginx, a load balancer): a
   * hop count (`1`: getConnInfo's address is your one proxy, the client the last
   * X-Forwarded-For entry), or your proxies' addresses and CIDR ranges (`'10.0.0.0/8'`,
   * `'loopback'`); `true` trusts every sender (spoofable; warned about). Cloudflare's and
   * Vercel's getConnInfo already read the platform's own client header: leave it off there.
   * See docs/proxies.md.
   * @default false
   */
  trustProxy?: TrustProxy
}

/** The variables the middleware sets: `c.get('rateLimit')` is the request's decision. */
export interface RateLimitVariables {
  rateLimit: Decision | undefined
}

/** The middleware, plus `close()`: stops the rules watcher it opened. */
export type RateLimiterMiddleware = MiddlewareHandler<{ Variables: RateLimitVariables }> & {
  close(): void
}

/** Without getConnInfo, a limiter keyed by address could never find one: refused at creation. */
function checkAddressSource(options: {
  getConnInfo?: unknown
  key?: unknown
  rules?: unknown
  trustProxy?: unknown
}): void {
  const { getConnInfo, key, rules, trustProxy } = options
  if (getConnInfo !== undefined && typeof getConnInfo !== 'function') {
    invalidOption('getConnInfo', getConnInfo, "a function such as getConnInfo from 'hono/bun'")
  }
  if (getConnInfo !== undefined) return
  if (trustProxy !== undefined && trustProxy !== false) {
    throw new ConfigError(
      "`trustProxy` needs `getConnInfo`: the address of the proxy the request came through (e.g. getConnInfo from '@hono/node-server/conninfo')",
    )
  }
  if (key === undefined && rules === undefined) {
    throw new ConfigError(
      `Hono rateLimiter: without \`getConnInfo\` no request has a client address, so every client would share one bucket. Give the address or a key:\n  - ${HONO_ADDRESS_FIXES.join('\n  - ')}`,
    )
  }
}

/**
 * Hono rate-limit middleware: `app.use(rateLimiter({ limit: 100, window: '1m', getConnInfo }))`.
 * Options are checked here, once; a bad one throws a ConfigError naming it. Pass the app's Env
 * (`rateLimiter<AppEnv>({...})`) for option functions typed by it.
 */
export function rateLimiter<E extends Env = Env>(
  options: HonoRateLimitOptions<E> = {},
): RateLimiterMiddleware {
  if (options === null || typeof options !== 'object')
    invalidOption('options', options, 'an object')
  checkAddressSource(options)
  const { getConnInfo, trustProxy, ...rest } = options
  type Req = Context & RequestLike
  const connAddress =
    getConnInfo === undefined
      ? undefined
      : addressFrom<Req>(
          (c) => getConnInfo(c).remote.address,
          'Hono',
          'getConnInfo',
          HONO_ADDRESS_FIXES,
        )
  const limiter = createFetchLimiter<Req>(rest as FetchLimitOptions<Req>, {
    framework: 'Hono',
    ...addressDefaults<Req>({
      peer(c) {
        const address = connAddress?.(c)
        if (address === undefined) {
          throw new MissingAddressError('Hono', 'none', 'getConnInfo', HONO_ADDRESS_FIXES)
        }
        return address
      },
      forwardedFor: (c) => c.req.header('x-forwarded-for'),
      trustProxy,
      proxyHint: PROXY_HINT,
    }),
    signalOf: (c) => c.req.raw.signal,
    methodOf: (c) => c.req.method,
  })

  const sluiceRateLimiter: MiddlewareHandler<{ Variables: RateLimitVariables }> = async (
    c,
    next,
  ) => {
    const response = await limiter.handle(
      c as Req,
      async (decision) => {
        c.set('rateLimit', decision)
        await next()
        return c.res
      },
      waitUntilOf(c),
    )
    // Set on c.res in place unless the handler's Response was immutable and had to be copied,
    // or its body is watched to hold a concurrency slot until it has been sent.
    if (response !== c.res) c.res = response
  }
  return Object.assign(sluiceRateLimiter, { close: () => limiter.core.close() })
}

export default rateLimiter

/**
 * The context's `executionCtx.waitUntil` (Cloudflare Workers), read only when a store call
 * timed out: Hono's `c.executionCtx` throws where the app was given none (Node, Bun, Deno,
 * which keep running after the response, so nothing is handed over there), and a throw per
 * request would cost a stack each.
 */
function waitUntilOf(c: Context): WaitUntil {
  return function waitUntil(promise) {
    let ctx: { waitUntil(promise: Promise<unknown>): void }
    try {
      ctx = c.executionCtx
    } catch {
      return
    }
    ctx.waitUntil(promise)
  }
}

/**
 * Keys by a request header (an API token), read from `c.req`: core's headerKey (first value of
 * a repeated header, `<name>:` prefix); `undefined` (the client address) when it is absent.
 * Every distinct value is its own bucket: for unauthenticated traffic, check the token first
 * (docs/hono.md).
 */
export function headerKey(name: string): (c: Context) => string | undefined {
  const byHeader = requestHeaderKey(name)
  return function keyByHeader(c) {
    return byHeader(c.req.raw)
  }
}

/**
 * The client-address key for `combineKeys`, from Hono's `getConnInfo` of your runtime, e.g.
 * `combineKeys(ipKey(getConnInfo), headerKey('x-api-key'))`. IPv6 is grouped by `ipv6Subnet`
 * (default 64); a request without an address is handled as `onMissingAddress` says.
 */
export function ipKey(
  getConnInfo: GetConnInfo,
  options: { ipv6Subnet?: number | false } = {},
): (c: Context) => string {
  if (typeof getConnInfo !== 'function') {
    invalidOption(
      'ipKey(getConnInfo)',
      getConnInfo,
      "a function such as getConnInfo from 'hono/bun'",
    )
  }
  return addressKey(
    (c: Context) => getConnInfo(c).remote.address,
    'Hono',
    options,
    HONO_ADDRESS_FIXES,
  )
}

export { ConfigError, SluiceError, StoreError } from '@sluice/core/web'
export { userKey, combineKeys, normalizeIp } from '@sluice/http'
export type { Decision } from '@sluice/core/web'
export type { TrustProxy } from '@sluice/http'
