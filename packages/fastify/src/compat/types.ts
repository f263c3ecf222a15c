/**
 * Owns the public shapes of `@sluice/fastify/compat`: @fastify/rate-limit's options, its store
 * interface and what `errorResponseBuilder` and `createRateLimit` give.
 */
import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify'

export type Awaitable<T> = T | Promise<T>

/** What a peer store's `incr` and `read` answer: requests counted in the key's window, ms left of it. */
export interface PeerStoreResult {
  current: number
  ttl: number
}

export type PeerStoreCallback = (error: Error | null, result?: PeerStoreResult) => void

/** A store written for @fastify/rate-limit (`store: MyStore`, a class), used as is. */
export interface PeerStore {
  incr(key: string, callback: PeerStoreCallback, timeWindow: number, max: number): void
  /** Needed only by `createRateLimit()(request, { increment: false })`. */
  read?(key: string, callback: PeerStoreCallback, timeWindow: number, max: number): void
  child(params: RateLimitParams): PeerStore
}

export type PeerStoreClass = new (params: RateLimitParams) => PeerStore

/** A request's key: what `keyGenerator` returns (a number stays a number in callbacks). */
export type RateLimitKey = string | number

/** A value per request, as @fastify/rate-limit calls `max` and `timeWindow`. */
export type PerRequest<T> = (request: FastifyRequest, key: RateLimitKey) => Awaitable<T>

/** The hooks a limit may run in. */
export type RateLimitHook = 'onRequest' | 'preParsing' | 'preValidation' | 'preHandler'

/** What `errorResponseBuilder` gets. */
export interface RateLimitContext {
  /** 429, or 403 when the client is banned. */
  statusCode: number
  ban: boolean
  max: number
  /** ms until the key's window ends. */
  ttl: number
  /** The same in words, e.g. `'7 seconds'`. */
  after: string
}

/** Options of a limit: the plugin's, a route's `config.rateLimit`, `fastify.rateLimit(options)`. */
export interface RateLimitOptions {
  /** Requests per window per key, or a function of the request and key. @default 1000 */
  max?: number | PerRequest<number>
  /** Window length: ms, a string such as `'1 minute'`, or a function of the request and key. @default 60000 */
  timeWindow?: number | string | PerRequest<number>
  /** The hook the limit runs in. @default 'onRequest' */
  hook?: RateLimitHook
  /** Keys (or a function of the request and key) that are never limited. @default undefined */
  allowList?: readonly string[] | PerRequest<boolean>
  /** The request's key. @default the client IP, IPv6 grouped by `ipv6Subnet` */
  keyGenerator?: (request: FastifyRequest) => Awaitable<RateLimitKey>
  /** IPv6 prefix length the default key groups by (0-128). @default 64 */
  ipv6Subnet?: number
  /** Builds what is thrown for a rejection. @default an Error 'Rate limit exceeded, retry in <after>' with its statusCode */
  errorResponseBuilder?: (request: FastifyRequest, context: RateLimitContext) => object
  /** After this many requests over `max` in a window, 403 instead of 429. @default -1 (off) */
  ban?: number
  /** Called when a ban is answered. @default no-op */
  onBanReach?: (request: FastifyRequest, key: RateLimitKey) => void
  /** Called for each request within the limit. @default no-op */
  onExceeding?: (request: FastifyRequest, key: RateLimitKey) => void
  /** Called for each request over the limit. @default no-op */
  onExceeded?: (request: FastifyRequest, key: RateLimitKey) => void
  /** Each request over the limit restarts the key's window. @default false */
  continueExceeding?: boolean
  /** Each request over the limit doubles the key's wait. @default false */
  exponentialBackoff?: boolean
  /** A store error lets the request through instead of failing it. @default false */
  skipOnError?: boolean
  /** Headers of rejections, by name, each on unless set to false. @default all true */
  addHeaders?: Readonly<Record<string, boolean>>
  /** Headers of admitted requests, by name, each on unless set to false. @default all true */
  addHeadersOnExceeding?: Readonly<Record<string, boolean>>
  /** Routes with the same groupId count together (route `config.rateLimit` only). @default undefined */
  groupId?: string
}

/** The plugin's options: a limit's, plus what every route shares. */
export interface RateLimitPluginOptions extends RateLimitOptions {
  /** Limit every route (`false`: only routes with `config.rateLimit`). @default true */
  global?: boolean
  /** A @fastify/rate-limit store class. @default Sluice's MemoryStore (or RedisStore with `redis`) */
  store?: PeerStoreClass
  /** An ioredis client: counters live in Redis (needs @sluice/redis installed). @default undefined */
  redis?: object
  /** Prefix of Redis keys. @default 'fastify-rate-limit-' */
  nameSpace?: string
  /** Keys kept in memory (least recently used go first). @default 5000 */
  cache?: number
  /** `ratelimit-*` header names (IETF draft) instead of `x-ratelimit-*`. @default false */
  enableDraftSpec?: boolean
  /** @fastify/rate-limit 10's name of `allowList` (removed in 11), for the plugin's options. @default undefined */
  whitelist?: RateLimitOptions['allowList']
}

/** Options as resolved once: every default applied. */
export interface RateLimitParams extends Omit<
  RateLimitPluginOptions,
  'max' | 'timeWindow' | 'ban' | 'ipv6Subnet' | 'hook'
> {
  max: number | PerRequest<number>
  timeWindow: number | PerRequest<number>
  ban: number
  ipv6Subnet: number
  hook: RateLimitHook
  labels: HeaderLabels
  addHeaders: Readonly<Record<string, boolean>>
  addHeadersOnExceeding: Readonly<Record<string, boolean>>
  /** The route a limit belongs to (empty for `rateLimit()`/`createRateLimit()` limits). */
  routeInfo: Partial<RouteOptions>
}

export interface HeaderLabels {
  rateLimit: string
  rateRemaining: string
  rateReset: string
  retryAfter: string
}

/** What `createRateLimit(options)(request)` answers. */
export type RateLimitResult =
  | { isAllowed: true; key: RateLimitKey }
  | {
      isAllowed: false
      key: RateLimitKey
      max: number
      timeWindow: number
      remaining: number
      ttl: number
      ttlInSeconds: number
      isExceeded: boolean
      isBanned: boolean
    }

export type RateLimitHandler = (request: FastifyRequest, reply: FastifyReply) => Promise<void>

declare module 'fastify' {
  interface FastifyInstance {
    /** A hook limiting with these options (merged over the plugin's). */
    rateLimit(options?: RateLimitOptions): RateLimitHandler
    /** A function that checks (and, unless `increment: false`, counts) a request under these options. */
    createRateLimit(
      options?: RateLimitOptions,
    ): (request: FastifyRequest, callOptions?: { increment?: boolean }) => Promise<RateLimitResult>
  }
}
