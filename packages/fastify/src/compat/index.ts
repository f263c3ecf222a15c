/**
 * @sluice/fastify/compat: a drop-in for @fastify/rate-limit. Its options, defaults, headers,
 * errors, decorators and stores, mapped onto Sluice's one HTTP pipeline (fixed windows from each
 * key's first request, as the peer counts).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify'
import fp from 'fastify-plugin'
import { createLimit, type Limit } from './limit'
import { normalizeIP } from './normalize-ip'
import { mergeParams, pluginParams } from './params'
import { placer } from './stores'
import type {
  RateLimitContext,
  RateLimitHandler,
  RateLimitOptions,
  RateLimitParams,
  RateLimitPluginOptions,
} from './types'
import { waitInWords } from './words'

export type * from './types'
export { normalizeIP }

function defaultErrorResponse(_request: FastifyRequest, context: RateLimitContext): object {
  const error = new Error(`Rate limit exceeded, retry in ${context.after}`) as Error & {
    statusCode: number
  }
  error.statusCode = context.statusCode
  return error
}

/** The hook of one limit: headers, callbacks, and the error thrown for a rejection. */
function limitHandler(limit: Limit, ran: symbol): RateLimitHandler {
  const { params } = limit
  const { labels, addHeaders, addHeadersOnExceeding } = params
  const header = (
    reply: FastifyReply,
    on: Readonly<Record<string, boolean>>,
    name: string,
    value: number,
  ) => {
    if (on[name]) reply.header(name, value)
  }
  return async (request, reply) => {
    const marks = request as unknown as Record<symbol, boolean>
    // A route limited twice (e.g. HEAD on a GET route) counts once.
    if (marks[ran]) return
    marks[ran] = true
    const result = await limit.apply(request)
    if (result.isAllowed) return
    const { key, max, remaining, ttl, ttlInSeconds } = result
    if (!result.isExceeded) {
      header(reply, addHeadersOnExceeding, labels.rateLimit, max)
      header(reply, addHeadersOnExceeding, labels.rateRemaining, remaining)
      header(reply, addHeadersOnExceeding, labels.rateReset, ttlInSeconds)
      params.onExceeding?.(request, key)
      return
    }
    params.onExceeded?.(request, key)
    header(reply, addHeaders, labels.rateLimit, max)
    header(reply, addHeaders, labels.rateRemaining, 0)
    header(reply, addHeaders, labels.rateReset, ttlInSeconds)
    header(reply, addHeaders, labels.retryAfter, ttlInSeconds)
    const context: RateLimitContext = {
      statusCode: 429,
      ban: false,
      max,
      ttl,
      after: waitInWords(ttlInSeconds * 1000),
    }
    if (result.isBanned) {
      context.statusCode = 403
      context.ban = true
      params.onBanReach?.(request, key)
    }
    throw (params.errorResponseBuilder ?? defaultErrorResponse)(request, context)
  }
}

/** Puts a limit's hook after the route's own hooks of that kind, as the peer does. */
function addRouteHook(route: RouteOptions, params: RateLimitParams, handler: RateLimitHandler) {
  const hooks = route as unknown as Record<string, unknown>
  const existing = hooks[params.hook]
  if (Array.isArray(existing)) existing.push(handler)
  else if (typeof existing === 'function') hooks[params.hook] = [existing, handler]
  else hooks[params.hook] = [handler]
}

function decorate(
  fastify: FastifyInstance,
  limitOf: (options: RateLimitOptions | undefined) => Limit,
  ran: symbol,
) {
  if (!fastify.hasDecorator('createRateLimit')) {
    fastify.decorate('createRateLimit', (options?: RateLimitOptions) => {
      const limit = limitOf(options)
      return (request: FastifyRequest, callOptions?: { increment?: boolean }) =>
        limit.apply(request, callOptions)
    })
  }
  if (!fastify.hasDecorator('rateLimit')) {
    fastify.decorate('rateLimit', (options?: RateLimitOptions) =>
      limitHandler(limitOf(options), ran),
    )
  }
}

async function fastifyRateLimit(fastify: FastifyInstance, options: RateLimitPluginOptions) {
  const globalParams = pluginParams(options)
  const place = await placer(options, globalParams)
  const globalLimit = createLimit(globalParams, place(globalParams, false), fastify.log)
  const ran = Symbol('fastify.request.rateLimitRan')
  fastify.decorateRequest(ran, false)

  const childLimit = (
    routeOptions: RateLimitOptions,
    routeInfo: RateLimitParams['routeInfo'],
  ): Limit => {
    const params = mergeParams(globalParams, routeOptions, routeInfo)
    return createLimit(params, place(params, true), fastify.log)
  }
  decorate(
    fastify,
    (limitOptions) =>
      typeof limitOptions === 'object' && limitOptions !== null
        ? childLimit(limitOptions, {})
        : globalLimit,
    ran,
  )

  fastify.addHook('onRoute', (route) => {
    const config = route.config as { rateLimit?: unknown } | undefined
    const routeOptions = config?.rateLimit
    if (routeOptions !== undefined && routeOptions !== null) {
      if (typeof routeOptions === 'object') {
        const limit = childLimit(routeOptions as RateLimitOptions, route)
        addRouteHook(route, limit.params, limitHandler(limit, ran))
      } else if (routeOptions !== false) {
        throw new Error('Unknown value for route rate-limit configuration')
      }
    } else if (globalParams.global === true) {
      addRouteHook(route, globalParams, limitHandler(globalLimit, ran))
    }
  })
}

/** The plugin, registered as @fastify/rate-limit is: `fastify.register(rateLimit, options)`. */
export const rateLimit = fp(fastifyRateLimit, { fastify: '5.x', name: '@fastify/rate-limit' })
export { fastifyRateLimit }
export default rateLimit
