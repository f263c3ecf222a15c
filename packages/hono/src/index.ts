/**
 * @sluice/hono: the Hono middleware, on @sluice/fetch's limiter (core's one pipeline). Option
 * functions (`key`, `skip`, `cost`, `message`...) receive Hono's Context.
 */
import {
  addressKey,
  createFetchLimiter,
  clientIpReader,
  type FetchLimitOptions,
} from '@sluice/fetch'
import {
  headerKey as requestHeaderKey,
  invalidOption,
  type Decision,
  type RequestLike,
} from '@sluice/core/web'
import type { Context, MiddlewareHandler } from 'hono'
import type { GetConnInfo } from 'hono/conninfo'

/** Sluice's options, with the client address from Hono's connection-info helper of your runtime. */
export interface HonoRateLimitOptions extends FetchLimitOptions<Context> {
  /**
   * Hono's `getConnInfo` of your runtime (`hono/bun`, `hono/deno`, `hono/cloudflare-workers`,
   * `@hono/node-server/conninfo`): the client address, for the default key and the allow/deny
   * lists. Without it (or a `key` that always answers) a request is an error naming the fix.
   * @default undefined
   */
  getConnInfo?: GetConnInfo
}

/** The variables the middleware sets: `c.get('rateLimit')` is the request's decision. */
export interface RateLimitVariables {
  rateLimit: Decision | undefined
}

/** The middleware, plus `close()`: stops the rules watcher it opened. */
export type RateLimiterMiddleware = MiddlewareHandler<{ Variables: RateLimitVariables }> & {
  close(): void
}

/**
 * Hono rate-limit middleware: `app.use(rateLimiter({ limit: 100, window: '1m', getConnInfo }))`.
 * Options are checked here, once; a bad one throws a ConfigError naming it.
 */
export function rateLimiter(options: HonoRateLimitOptions = {}): RateLimiterMiddleware {
  if (options === null || typeof options !== 'object')
    invalidOption('options', options, 'an object')
  const { getConnInfo, ...rest } = options
  if (getConnInfo !== undefined && typeof getConnInfo !== 'function') {
    invalidOption('getConnInfo', getConnInfo, "a function such as getConnInfo from 'hono/bun'")
  }
  type Req = Context & RequestLike
  const limiter = createFetchLimiter<Req>(rest as FetchLimitOptions<Req>, {
    framework: 'Hono',
    clientIp: clientIpReader<Req>(
      getConnInfo === undefined ? undefined : (c) => getConnInfo(c).remote.address,
      () => undefined,
      'Hono',
    ),
    signalOf: (c) => c.req.raw.signal,
  })

  const sluiceRateLimiter: MiddlewareHandler<{ Variables: RateLimitVariables }> = async (
    c,
    next,
  ) => {
    const response = await limiter.handle(c as Req, async (decision) => {
      c.set('rateLimit', decision)
      await next()
      return c.res
    })
    // Set on c.res in place unless the handler's Response was immutable and had to be copied.
    if (response !== c.res) c.res = response
  }
  return Object.assign(sluiceRateLimiter, { close: () => limiter.core.close() })
}

export default rateLimiter
/**
 * Keys by a request header (an API token), read from `c.req`: core's headerKey (first value of
 * a repeated header, `<name>:` prefix); `undefined` (the client address) when it is absent.
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
 * (default 64); a request without an address is a ConfigError.
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
  return addressKey((c: Context) => getConnInfo(c).remote.address, 'Hono', options)
}

export { userKey, combineKeys, ConfigError, SluiceError, StoreError } from '@sluice/core/web'
export type { Decision } from '@sluice/core/web'
