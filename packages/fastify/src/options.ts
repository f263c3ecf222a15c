/**
 * Owns the plugin's options: their types, the refusal of @fastify/rate-limit's names for
 * Sluice's options, what a route inherits from the plugin, and the value a rejection throws.
 */
import type { ServerResponse } from 'node:http'
import { type Decision } from '@sluice/core'
import { type HttpLimitOptions, type ProxyTrust, type RejectVerdict } from '@sluice/http'
import { invalidOption } from '@sluice/core/adapter'
import { refusePeerNames } from '@sluice/http'
import type { FastifyReply, FastifyRequest } from 'fastify'

export type Awaitable<T> = T | Promise<T>

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

export type LegacyHeader = 'x-ratelimit-limit' | 'x-ratelimit-remaining' | 'x-ratelimit-reset'

/** Options that may differ per route (`config.rateLimit`). */
export interface FastifyRateLimitRouteOptions extends Omit<
  HttpLimitOptions<FastifyRequest, ServerResponse>,
  'store' | 'clock' | 'logger'
> {
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

export const ADAPTER_OPTIONS = [
  'errorResponseBuilder',
  'hook',
  'addHeaders',
  'addHeadersOnExceeding',
  'onExceeding',
  'onExceeded',
  'groupId',
  'handler',
  'global',
] as const
export const LEGACY_NAMES = {
  limit: 'x-ratelimit-limit',
  remaining: 'x-ratelimit-remaining',
  reset: 'x-ratelimit-reset',
  retryAfter: 'x-ratelimit-retry-after',
}
export const HOOKS = ['onRequest', 'preParsing', 'preValidation', 'preHandler'] as const

export function trustOf(request: FastifyRequest): ProxyTrust {
  if (!('ips' in request)) return 'none'
  const forwarded = request.headers['x-forwarded-for']
  // Only a chain of several hops shows whether every one was trusted.
  if (typeof forwarded === 'string' && forwarded.includes(',')) {
    if (request.ips!.length > forwarded.split(',').length) return 'all'
  }
  return 'some'
}

/** Options that together say what the limit is; a route's `limits` or `rules` replaces all of them. */
export const LIMIT_SHAPE = [
  'limit',
  'limits',
  'window',
  'algorithm',
  'burst',
  'precision',
  'throttle',
  'rules',
  'descriptors',
] as const

/**
 * What a route inherits from the plugin's options: route settings win. A route that sets its
 * limits whole (`limits` or `rules`) inherits none of the plugin's limit options, so a
 * plugin-level `window` never conflicts with them; a route that sets `limit`/`window` drops the
 * plugin's `limits` and `rules`.
 */
export function inheritedBy(
  route: FastifyRateLimitRouteOptions,
  base: FastifyRateLimitRouteOptions,
): FastifyRateLimitRouteOptions {
  const inherited: Record<string, unknown> = { ...base }
  const drop = (names: readonly string[]): void => {
    for (const name of names) delete inherited[name]
  }
  if ('limits' in route || 'rules' in route) drop(LIMIT_SHAPE)
  if ('limit' in route || 'window' in route) drop(['limits', 'rules', 'descriptors'])
  return inherited as FastifyRateLimitRouteOptions
}

/** Names turned off in an `addHeaders`-style object. */
export function omitted(value: unknown, option: string): string[] {
  if (value === undefined) return []
  if (typeof value !== 'object' || value === null)
    invalidOption(option, value, 'an object of header names to booleans')
  return Object.entries(value)
    .filter(([, on]) => on === false)
    .map(([name]) => name)
}

/** @fastify/rate-limit's names for Sluice's options: refused here, kept by the compat entry. */
const FASTIFY_RATE_LIMIT_NAMES = {
  peer: '@fastify/rate-limit',
  compatEntry: '@sluice/fastify/compat',
  names: {
    max: '`limit`',
    timeWindow: '`window`',
    keyGenerator: '`key`',
    skipOnError: "`onStoreError: 'allow'`",
  },
}

/** Sluice's options, without the plugin's own, once. */
export function toCore(options: FastifyRateLimitRouteOptions): HttpLimitOptions<FastifyRequest> {
  refusePeerNames(options, FASTIFY_RATE_LIMIT_NAMES)
  const core: Record<string, unknown> = {}
  for (const [name, value] of Object.entries(options)) {
    if (value !== undefined && !(ADAPTER_OPTIONS as readonly string[]).includes(name))
      core[name] = value
  }
  return core as HttpLimitOptions<FastifyRequest>
}

/** The value thrown for a rejection: it carries `statusCode` for any error handler. */
export function rejection(
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
  return defaultRejection(verdict)
}

/**
 * The rejection without an errorResponseBuilder: a plain object, so Fastify's default handler
 * sends it as the body; custom handlers see it too.
 */
export function defaultRejection(verdict: RejectVerdict): object {
  const body = verdict.body
  return typeof body === 'object' && body !== null && !Array.isArray(body)
    ? { statusCode: verdict.status, ...body }
    : { statusCode: verdict.status, error: 'Too Many Requests', message: body }
}
