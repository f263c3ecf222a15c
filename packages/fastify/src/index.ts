/**
 * @sluice/fastify: the Fastify plugin, route options, and @fastify/rate-limit's option names.
 */
import {
  checkAliasDuration,
  checkAliasLimit,
  checkAlias,
  createHttpLimiter,
  invalidOption,
  MemoryStore,
  type Decision,
  type HttpLimiter,
  type HttpLimitOptions,
  type AllowVerdict,
  type HttpVerdict,
  type ProxyTrust,
  type RejectVerdict,
  isPromise,
} from '@sluice/core'
import type {
  FastifyPluginAsync,
  FastifyReply,
  FastifyRequest,
  onRequestHookHandler,
  RouteOptions,
} from 'fastify'
import fp from 'fastify-plugin'

type Awaitable<T> = T | Promise<T>

declare module 'fastify' {
  interface FastifyRequest {
    /** The rate-limit decision for this request (absent when the route is not limited or was skipped). */
    rateLimit?: Decision
  }
  interface FastifyContextConfig {
    /** Per-route limits (merged over the plugin's options), or `false` for none. */
    rateLimit?: FastifyRateLimitRouteOptions | false
  }
}

/** What `errorResponseBuilder` gets, as @fastify/rate-limit passes it (plus the decision). */
export interface ErrorResponseContext {
  statusCode: number
  /** True when the rejection is a ban (403). */
  ban: boolean
  max: number
  /** ms until the client may retry. */
  ttl: number
  /** e.g. '30 seconds'. */
  after: string
  key: string
  decision: Decision
}

type LegacyHeader = 'x-ratelimit-limit' | 'x-ratelimit-remaining' | 'x-ratelimit-reset'

/** Options that may differ per route (`config.rateLimit`). */
export interface FastifyRateLimitRouteOptions extends Omit<
  HttpLimitOptions<FastifyRequest>,
  'store' | 'clock' | 'logger'
> {
  /** @fastify/rate-limit alias of `limit`. @default 1000 */
  max?: number | ((request: FastifyRequest) => Awaitable<number>)
  /** @fastify/rate-limit alias of `window`: ms or e.g. '1 minute'. @default 60000 */
  timeWindow?: number | string
  /** @fastify/rate-limit alias of `key`. @default request.ip, IPv6 by /64 */
  keyGenerator?: (request: FastifyRequest) => Awaitable<string>
  /** Builds what is thrown to Fastify's error handling; `statusCode` is added when missing. @default { statusCode, error, message, retryAfter } */
  errorResponseBuilder?: (request: FastifyRequest, context: ErrorResponseContext) => object
  /** The hook the limit runs in. @default 'onRequest' */
  hook?: 'onRequest' | 'preParsing' | 'preValidation' | 'preHandler'
  /** Headers of rejections, each on by default. @default all true */
  addHeaders?: Partial<Record<LegacyHeader | 'retry-after', boolean>>
  /** Headers of admitted responses, each on by default. @default all true */
  addHeadersOnExceeding?: Partial<Record<LegacyHeader, boolean>>
  /** Called for every admitted request. @default undefined */
  onExceeding?: (request: FastifyRequest, key: string) => void
  /** Called for every rejected request. @default undefined */
  onExceeded?: (request: FastifyRequest, key: string) => void
  /** @fastify/rate-limit alias: `true` means `onStoreError: 'allow'`. @default false */
  skipOnError?: boolean
  /** Routes with the same groupId share one counter. @default each route with its own config counts alone */
  groupId?: string
  /** Answers rate-limited requests itself instead of throwing (not ban or deny 403s). @default undefined */
  handler?: (request: FastifyRequest, reply: FastifyReply, decision: Decision) => Awaitable<unknown>
}

/** Plugin options: everything a route may set, plus what the whole app shares. */
export interface FastifyRateLimitOptions extends FastifyRateLimitRouteOptions {
  /** Limit every route (`false`: only routes with `config.rateLimit`). @default true */
  global?: boolean
  store?: HttpLimitOptions<FastifyRequest>['store']
  clock?: HttpLimitOptions<FastifyRequest>['clock']
  logger?: HttpLimitOptions<FastifyRequest>['logger']
}

const ADAPTER_OPTIONS = [
  'max',
  'timeWindow',
  'keyGenerator',
  'errorResponseBuilder',
  'hook',
  'addHeaders',
  'addHeadersOnExceeding',
  'onExceeding',
  'onExceeded',
  'skipOnError',
  'groupId',
  'handler',
  'global',
] as const
const LEGACY_NAMES = {
  limit: 'x-ratelimit-limit',
  remaining: 'x-ratelimit-remaining',
  reset: 'x-ratelimit-reset',
  retryAfter: 'x-ratelimit-retry-after',
}
const HOOKS = ['onRequest', 'preParsing', 'preValidation', 'preHandler'] as const

function trustOf(request: FastifyRequest): ProxyTrust {
  if (!('ips' in request)) return 'none'
  const forwarded = request.headers['x-forwarded-for']
  // Only a chain of several hops shows whether every one was trusted.
  if (typeof forwarded === 'string' && forwarded.includes(',')) {
    if (request.ips!.length > forwarded.split(',').length) return 'all'
  }
  return 'some'
}

/** Options that together say what the limit is; a route's `limits` or `rules` replaces all of them. */
const LIMIT_SHAPE = [
  'limit',
  'max',
  'limits',
  'window',
  'timeWindow',
  'algorithm',
  'burst',
  'precision',
  'throttle',
  'rules',
  'descriptors',
] as const

/**
 * What a route inherits from the plugin's options: route settings win, including over the
 * plugin's alias spellings. A route that sets its limits whole (`limits` or `rules`) inherits
 * none of the plugin's limit options, so a plugin-level `window` never conflicts with them; a
 * route that sets `max`/`timeWindow` drops the plugin's `limits` and `rules`.
 */
function inheritedBy(
  route: FastifyRateLimitRouteOptions,
  base: FastifyRateLimitRouteOptions,
): FastifyRateLimitRouteOptions {
  const inherited: Record<string, unknown> = { ...base }
  const drop = (names: readonly string[]): void => {
    for (const name of names) delete inherited[name]
  }
  if ('limits' in route || 'rules' in route) drop(LIMIT_SHAPE)
  if ('limit' in route || 'max' in route || 'window' in route || 'timeWindow' in route)
    drop(['limits', 'rules', 'descriptors'])
  if ('limit' in route || 'max' in route) drop(['limit', 'max'])
  if ('window' in route || 'timeWindow' in route) drop(['window', 'timeWindow'])
  if ('key' in route || 'keyGenerator' in route) drop(['key', 'keyGenerator'])
  return inherited as FastifyRateLimitRouteOptions
}

/** Names turned off in an `addHeaders`-style object. */
function omitted(value: unknown, option: string): string[] {
  if (value === undefined) return []
  if (typeof value !== 'object' || value === null)
    invalidOption(option, value, 'an object of header names to booleans')
  return Object.entries(value)
    .filter(([, on]) => on === false)
    .map(([name]) => name)
}

/** Maps @fastify/rate-limit names onto Sluice's, once. */
function toCore(options: FastifyRateLimitRouteOptions): HttpLimitOptions<FastifyRequest> {
  const core: Record<string, unknown> = {}
  for (const [name, value] of Object.entries(options)) {
    if (value !== undefined && !(ADAPTER_OPTIONS as readonly string[]).includes(name))
      core[name] = value
  }
  const { max, timeWindow, keyGenerator, skipOnError } = options
  checkAlias('max', max, 'limit', core.limit)
  checkAlias('timeWindow', timeWindow, 'window', core.window)
  checkAlias('keyGenerator', keyGenerator, 'key', core.key)
  checkAlias('skipOnError', skipOnError, 'onStoreError', core.onStoreError)
  checkAliasLimit(max, 'max')
  checkAliasDuration(timeWindow, 'timeWindow')
  if (max !== undefined) core.limit = max
  if (timeWindow !== undefined) core.window = timeWindow
  if (keyGenerator !== undefined) core.key = keyGenerator
  if (skipOnError !== undefined) core.onStoreError = skipOnError ? 'allow' : 'throw'
  return core as HttpLimitOptions<FastifyRequest>
}

/** The value thrown for a rejection: it carries `statusCode` for any error handler. */
function rejection(
  request: FastifyRequest,
  verdict: RejectVerdict,
  build: FastifyRateLimitRouteOptions['errorResponseBuilder'],
): object {
  if (build !== undefined && verdict.decision !== undefined) {
    const built = build(request, {
      statusCode: verdict.status,
      ban: verdict.reason === 'banned',
      max: verdict.decision.limit,
      ttl: verdict.retryAfterSeconds * 1000,
      after: `${verdict.retryAfterSeconds} second${verdict.retryAfterSeconds === 1 ? '' : 's'}`,
      key: verdict.key,
      decision: verdict.decision,
    })
    if (built instanceof Error) {
      const error = built as Error & { statusCode?: number }
      error.statusCode ??= verdict.status
      return error
    }
    return { statusCode: verdict.status, ...built }
  }
  // A plain object, so Fastify's default handler sends it as the body; custom handlers see it too.
  const body = verdict.body
  return typeof body === 'object' && body !== null && !Array.isArray(body)
    ? { statusCode: verdict.status, ...body }
    : { statusCode: verdict.status, error: 'Too Many Requests', message: body }
}

function createHook(
  limiter: HttpLimiter<FastifyRequest>,
  options: FastifyRateLimitRouteOptions,
  hook: NonNullable<FastifyRateLimitRouteOptions['hook']>,
) {
  const { onExceeding, onExceeded, handler, errorResponseBuilder } = options
  for (const [name, fn] of Object.entries({
    onExceeding,
    onExceeded,
    handler,
    errorResponseBuilder,
  })) {
    if (fn !== undefined && typeof fn !== 'function') invalidOption(name, fn, 'a function')
  }
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
    throw refuse(request, verdict)
  }

  /** What a rejection hands Fastify's error handling (after onExceeded). */
  function refuse(request: FastifyRequest, verdict: RejectVerdict): object {
    if (verdict.reason === 'limited' || verdict.reason === 'banned')
      onExceeded?.(request, verdict.key)
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
    for (const [name, value] of verdict.headers) reply.header(name, value)
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
    if (isPromise(verdict)) {
      verdict.then((settled) => {
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
      // Through `done`, not a rejected promise: the same error handling for a fraction of the
      // work (a promise rejected before Fastify sees it goes through Node's rejection tracking).
      request.rateLimit = verdict.decision
      for (const [name, value] of verdict.headers) reply.header(name, value)
      done(refuse(request, verdict))
      return undefined
    } catch (error) {
      return Promise.reject(error)
    }
  }
}

const rateLimitPlugin: FastifyPluginAsync<FastifyRateLimitOptions> = async (fastify, options) => {
  const { global = true, ...shared } = options
  if (typeof global !== 'boolean') invalidOption('global', global, 'true or false')
  // One store, clock and logger for every route, so groups and the global limit see the same state.
  const base: FastifyRateLimitOptions = { ...shared, store: shared.store ?? new MemoryStore() }

  function build(merged: FastifyRateLimitRouteOptions, prefix: string) {
    const hook = merged.hook ?? 'onRequest'
    if (!HOOKS.includes(hook))
      invalidOption('hook', hook, `one of ${HOOKS.map((h) => `'${h}'`).join(', ')}`)
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
    return { hook, handler: createHook(limiter, merged, hook) }
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
    ;(route as unknown as Record<string, unknown>)[chosen.hook] = [chosen.handler, ...own]
  })
}

/** Fastify 5 plugin: `app.register(rateLimit, options)`. Options are checked at register. */
export const rateLimit = fp(rateLimitPlugin, { fastify: '5.x', name: '@sluice/fastify' })

export default rateLimit
export { ipKey, headerKey, userKey, combineKeys } from '@sluice/core'
export type { Decision, HttpLimitOptions, StandardHeadersDraft } from '@sluice/core'
