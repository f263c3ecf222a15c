/**
 * @sluice/koa/compat: koa-ratelimit's `ratelimit(options)` on Sluice's Koa middleware, so
 * moving over is a change of import. The peer's options and defaults, mapped once onto the one
 * pipeline the main entry runs.
 */
import type { Context, Next } from 'koa'
import { koaMiddleware, type RateLimitMiddleware } from '../middleware'
import { resolveRatelimit, type RatelimitOptions } from './options'

/**
 * koa-ratelimit's middleware: a bad option throws a ConfigError naming it, at creation.
 * `require('@sluice/koa/compat')` is this function, as `require('koa-ratelimit')` is the peer's.
 */
function ratelimit(options: RatelimitOptions = {}): RateLimitMiddleware {
  const { core, answer, blacklist } = resolveRatelimit(options)
  const limited = koaMiddleware(core, answer)
  if (blacklist === undefined) return limited
  // Deny-listed requests throw 403 before anything is counted, whatever their id, as the peer's.
  async function ratelimitBlacklist(ctx: Context, next: Next): Promise<unknown> {
    if (await blacklist!(ctx)) ctx.throw(403, 'Forbidden')
    return limited(ctx, next)
  }
  return Object.assign(ratelimitBlacklist, { close: limited.close })
}

// The types ride on the function (`ratelimit.Options`): the CommonJS build's module is the
// function itself, which can carry no other export.
// eslint-disable-next-line @typescript-eslint/no-namespace
declare namespace ratelimit {
  /** koa-ratelimit's options, with its defaults. */
  export type Options = RatelimitOptions
  export type Middleware = RateLimitMiddleware
}

export default ratelimit
