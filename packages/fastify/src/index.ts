/**
 * @sluice/fastify: the Fastify plugin and its route options, with Sluice's option names
 * (@fastify/rate-limit's are kept by `@sluice/fastify/compat`).
 */
import { MemoryStore } from '@sluice/core'
import {
  type HttpLimiter,
  type AllowVerdict,
  type HttpVerdict,
  type RejectVerdict,
} from '@sluice/http'
import { invalidOption } from '@sluice/core/adapter'
import { createRefusalJson, JSON_CONTENT_TYPE } from '@sluice/http'
import { createHttpLimiter } from '@sluice/rules'
import type {
  FastifyPluginAsync,
  FastifyReply,
  FastifyRequest,
  onRequestHookHandler,
  RouteOptions,
} from 'fastify'
import fp from 'fastify-plugin'
import {
  FASTIFY_OPTIONS,
  inheritedBy,
  ownOptionsOf,
  LEGACY_NAMES,
  omitted,
  rejection,
  defaultRejection,
  toCore,
  trustOf,
  type FastifyRateLimitOptions,
  type FastifyRateLimitRouteOptions,
} from './options'

export type {
  ErrorResponseContext,
  FastifyRateLimitOptions,
  FastifyRateLimitRouteOptions,
} from './options'

/**
 * Whether a rejection on this request may skip Fastify's error handling: only where the handler
 * in force is Fastify's own and nothing custom builds the body, so the response is the one that
 * handler would send (status, headers, body), without its error plumbing and info-level log line
 * per 429: the 429 path under a flood costs less than an admitted request. A route with its own
 * `errorHandler`, `setErrorHandler` in the route's context, or an `errorResponseBuilder` keeps
 * the thrown rejection.
 */
function defaultErrorHandling(request: FastifyRequest): boolean {
  return request.server.errorHandler.name === 'defaultErrorHandler'
}

function createHook(
  limiter: HttpLimiter<FastifyRequest>,
  options: FastifyRateLimitRouteOptions,
  hook: NonNullable<FastifyRateLimitRouteOptions['hook']>,
  routeErrorHandler: boolean,
  responseSchema: boolean,
) {
  const { onExceeding, onExceeded, handler, errorResponseBuilder } = options
  const sendsDirectly = !routeErrorHandler && errorResponseBuilder === undefined
  // A route that declares response schemas serializes its 429 through them: no shared JSON.
  const refusalJson = responseSchema
    ? undefined
    : createRefusalJson(options.message, (verdict) => JSON.stringify(defaultRejection(verdict)))
  /** Applies a verdict: headers and decision on the request, then admits, answers or throws. */
  async function apply(request: FastifyRequest, reply: FastifyReply, verdict: HttpVerdict) {
    if (verdict.action === 'pass') return
    request.rateLimit = verdict.decision
    for (const [name, value] of verdict.headers) reply.header(name, value)
    if (verdict.action === 'allow') {
      onExceeding?.(request, verdict.key)
      return
    }
    if (verdict.reason === 'limited' && handler !== undefined) {
      onExceeded?.(request, verdict.key)
      await handler(request, reply, verdict.decision!)
      return reply
    }
    if (sendsDirectly && defaultErrorHandling(request)) return sendRefusal(request, reply, verdict)
    throw refuse(request, verdict)
  }

  /** Answers a rejection as Fastify's default error handler would, without its plumbing. */
  function sendRefusal(request: FastifyRequest, reply: FastifyReply, verdict: RejectVerdict) {
    const json = refusalJson?.(verdict)
    if (json === undefined) return reply.code(verdict.status).send(refuse(request, verdict))
    notifyExceeded(request, verdict)
    return reply.code(verdict.status).type(JSON_CONTENT_TYPE).send(json)
  }

  /** onExceeded, for a rejection over the limit (limited, or banned for it). */
  function notifyExceeded(request: FastifyRequest, verdict: RejectVerdict): void {
    if (verdict.reason === 'limited' || verdict.reason === 'banned')
      onExceeded?.(request, verdict.key)
  }

  /** What a rejection hands Fastify's error handling (after onExceeded). */
  function refuse(request: FastifyRequest, verdict: RejectVerdict): object {
    notifyExceeded(request, verdict)
    return rejection(request, verdict, errorResponseBuilder)
  }

  // Store failures reject here and reach Fastify's error handling: a 500 unless handled.
  async function sluiceRateLimit(request: FastifyRequest, reply: FastifyReply) {
    return apply(request, reply, await limiter.decideNow(request, reply.raw))
  }
  if (hook === 'preParsing') return sluiceRateLimit

  /** Admits: the decision on the request, the headers on the reply, then onExceeding. */
  function admit(request: FastifyRequest, reply: FastifyReply, verdict: AllowVerdict) {
    request.rateLimit = verdict.decision
    // Indexed: a for-of with [name, value] cost about 0.1k instructions a request more.
    const headers = verdict.headers
    for (let i = 0; i < headers.length; i++) reply.header(headers[i][0], headers[i][1])
    onExceeding?.(request, verdict.key)
  }

  /**
   * The same hook in callback style (onRequest, preValidation, preHandler): an admitted request
   * goes on through `done`, at once when decided at once, else when the store answers, with no
   * promise of the hook's own for Fastify to follow; a rejection returns (or, decided later,
   * settles `done` with) apply's promise, as the async hook would.
   */
  return function sluiceRateLimitNow(
    request: FastifyRequest,
    reply: FastifyReply,
    done: (error?: unknown) => void,
  ): Promise<unknown> | undefined {
    let verdict: HttpVerdict | Promise<HttpVerdict>
    try {
      verdict = limiter.decideNow(request, reply.raw)
    } catch (error) {
      return Promise.reject(error)
    }
    // Not through isPromise: this site's own feedback sees a verdict alone (no `then` lookup).
    if (typeof (verdict as { then?: unknown }).then === 'function') {
      ;(verdict as Promise<HttpVerdict>).then((settled) => {
        if (settled.action === 'pass') return done()
        if (settled.action !== 'allow') {
          apply(request, reply, settled).then(() => done(), done)
          return
        }
        try {
          admit(request, reply, settled)
        } catch (error) {
          return done(error)
        }
        done()
      }, done)
      return undefined
    }
    verdict = verdict as HttpVerdict
    if (verdict.action === 'pass') {
      done()
      return undefined
    }
    try {
      if (verdict.action === 'allow') {
        admit(request, reply, verdict)
        done()
        return undefined
      }
      if (verdict.reason === 'limited' && handler !== undefined)
        return apply(request, reply, verdict)
      request.rateLimit = verdict.decision
      for (const [name, value] of verdict.headers) reply.header(name, value)
      if (sendsDirectly && defaultErrorHandling(request)) {
        // An early response from a callback hook: send, and do not call done.
        sendRefusal(request, reply, verdict)
        return undefined
      }
      // Through `done`, not a rejected promise: the same error handling for a fraction of the
      // work (a promise rejected before Fastify sees it goes through Node's rejection tracking).
      done(refuse(request, verdict))
      return undefined
    } catch (error) {
      return Promise.reject(error)
    }
  }
}

const rateLimitPlugin: FastifyPluginAsync<FastifyRateLimitOptions> = async (fastify, options) => {
  const { global } = FASTIFY_OPTIONS.resolve(ownOptionsOf(options))
  const { global: _global, ...shared } = options
  // One store, clock and logger for every route, so groups and the global limit see the same state.
  const base: FastifyRateLimitOptions = { ...shared, store: shared.store ?? new MemoryStore() }

  function build(merged: FastifyRateLimitRouteOptions, prefix: string) {
    // The plugin's own options, checked once per limit (the pipeline checks the rest).
    const hook = FASTIFY_OPTIONS.resolve(ownOptionsOf(merged)).hook!
    const core = toCore(merged)
    const limiter = createHttpLimiter<FastifyRequest>(
      { ...core, prefix: `${core.prefix ?? ''}${prefix}` },
      {
        framework: 'Fastify',
        resetStyle: 'delta',
        // reply.header lower-cases every name; given in lower case, it has nothing to convert.
        legacyNames: LEGACY_NAMES,
        proxyTrust: trustOf,
        peerAddress: (request) => request.raw.socket?.remoteAddress,
        proxyHint:
          "set Fastify({ trustProxy: '<your proxy's address or CIDR>' }), e.g. '10.0.0.1' or '10.0.0.0/8' (a hop count such as trustProxy: 1 trusts nothing on Fastify 5.12 and later).",
        omitWhenAllowed: omitted(merged.addHeadersOnExceeding, 'addHeadersOnExceeding'),
        omitWhenRejected: omitted(merged.addHeaders, 'addHeaders'),
        customRejection: merged.handler !== undefined,
      },
    )
    built.push(limiter)
    const variants = new Map<string, ReturnType<typeof createHook>>()
    return {
      hook,
      /**
       * The hook for a route: rejections reach a route's own `errorHandler`, and go through its
       * response schemas when it declares any.
       */
      handlerFor(route: RouteOptions) {
        const ownErrorHandler = route.errorHandler !== undefined
        const responseSchema = route.schema?.response !== undefined
        const id = `${ownErrorHandler} ${responseSchema}`
        let handler = variants.get(id)
        if (handler === undefined) {
          handler = createHook(limiter, merged, hook, ownErrorHandler, responseSchema)
          variants.set(id, handler)
        }
        return handler
      },
    }
  }

  // Every limiter built (global, groups, routes), so closing the app stops their rules watchers.
  const built: Array<HttpLimiter<FastifyRequest>> = []
  fastify.addHook('onClose', async () => {
    for (const limiter of built.splice(0)) limiter.close()
  })
  const globalLimit = build(base, '')
  const groups = new Map<string, ReturnType<typeof build>>()

  fastify.decorateRequest('rateLimit', undefined)
  fastify.addHook('onRoute', (route: RouteOptions) => {
    const routeConfig = (
      route.config as { rateLimit?: FastifyRateLimitRouteOptions | false } | undefined
    )?.rateLimit
    if (routeConfig === false) return
    let chosen = global ? globalLimit : undefined
    if (routeConfig !== undefined) {
      if (typeof routeConfig !== 'object' || routeConfig === null) {
        invalidOption('config.rateLimit', routeConfig, 'an object or false')
      }
      const merged = { ...inheritedBy(routeConfig, base), ...routeConfig }
      const groupId = routeConfig.groupId
      if (groupId !== undefined) {
        if (typeof groupId !== 'string' || groupId === '')
          invalidOption('groupId', groupId, 'a non-empty string')
        chosen = groups.get(groupId)
        if (chosen === undefined) {
          chosen = build(merged, `group:${groupId}:`)
          groups.set(groupId, chosen)
        }
      } else {
        const methods = Array.isArray(route.method) ? route.method.join(',') : route.method
        chosen = build(merged, `route:${methods} ${route.url}:`)
      }
    }
    if (chosen === undefined) return
    // Runs first, keeping the route's own hooks after it.
    const existing = route[chosen.hook] as onRequestHookHandler | onRequestHookHandler[] | undefined
    const own = existing === undefined ? [] : Array.isArray(existing) ? existing : [existing]
    ;(route as unknown as Record<string, unknown>)[chosen.hook] = [chosen.handlerFor(route), ...own]
  })
}

/** Fastify 5 plugin: `app.register(rateLimit, options)`. Options are checked at register. */
export const rateLimit = fp(rateLimitPlugin, { fastify: '5.x', name: '@sluice/fastify' })

export default rateLimit
export { ipKey, headerKey, userKey, combineKeys, normalizeIp } from '@sluice/http'
export type { Decision } from '@sluice/core'
export type { HttpLimitOptions, StandardHeadersDraft } from '@sluice/http'
