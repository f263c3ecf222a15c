/**
 * Owns the public shapes of the express-rate-limit compatibility entry: express-rate-limit 8's
 * option, store and request-info types, so code written against that package type-checks here.
 */
import type { Store as SluiceStore } from '@sluice/core'
import type { NextFunction, Request, RequestHandler, Response } from 'express'

type Awaitable<T> = T | Promise<T>

/** A value an option may compute per request, as express-rate-limit's options do. */
export type ValueDeterminingMiddleware<T> = (req: Request, res: Response) => Awaitable<T>

/** Receives store initialisation errors, `passOnStoreError` errors and option warnings. */
export interface Logger {
  error(error: unknown, message?: string): void
  warn(error: unknown, message?: string): void
}

/** What a store answers for one key: hits in the current window and when that window ends. */
export interface ClientRateLimitInfo {
  totalHits: number
  resetTime: Date | undefined
}

export type IncrementResponse = ClientRateLimitInfo

/** The callback of a pre-v6 store's `incr`. */
export type IncrementCallback = (
  error: Error | undefined,
  totalHits: number,
  resetTime: Date | undefined,
) => void

/** express-rate-limit's store interface: every third-party store for it implements this. */
export interface Store {
  /** Called once, when the middleware is created, with the resolved options. */
  init?(options: Options): void | Promise<void>
  /** Counts a hit for the key; returns the hits in its window so far. */
  increment(key: string): Awaitable<ClientRateLimitInfo>
  /** Takes back one hit (skipSuccessfulRequests, skipFailedRequests). */
  decrement(key: string): Awaitable<void>
  /** Forgets the key. */
  resetKey(key: string): Awaitable<void>
  /** Reads the key without counting (the middleware's `getKey`). */
  get?(key: string): Awaitable<ClientRateLimitInfo | undefined>
  resetAll?(): Awaitable<void>
  shutdown?(): Awaitable<void>
  /** True when the store keeps its counts in this process. */
  localKeys?: boolean
  prefix?: string
}

/** The pre-v6 store interface (`incr` with a callback). */
export interface LegacyStore {
  incr(key: string, callback: IncrementCallback): void
  decrement(key: string): void
  resetKey(key: string): void
  resetAll?(): void
}

export type DraftHeadersVersion = 'draft-6' | 'draft-7' | 'draft-8'

/**
 * express-rate-limit's `validate` switches: `xForwardedForHeader` and `trustProxy` turn the proxy
 * checks off (see docs/proxies.md); the others are accepted, without effect here.
 */
export type EnabledValidations = { [name: string]: boolean | undefined; default?: boolean }

/** Answers a request over its limit; the fourth argument is the resolved options. */
export type RateLimitExceededEventHandler = (
  req: Request,
  res: Response,
  next: NextFunction,
  optionsUsed: Options,
) => unknown

/** express-rate-limit's options, every one with its default there. */
export interface Options {
  /** Window length in ms; each key's window starts at its first hit. @default 60000 */
  windowMs: number
  /** Hits allowed per window; 0 refuses every request. @default 5 */
  limit: number | ValueDeterminingMiddleware<number>
  /** The body of a rejection: a string is sent as text, an object as JSON. @default 'Too many requests, please try again later.' */
  message: unknown
  /** Status of a rejection. @default 429 */
  statusCode: number
  /** `X-RateLimit-Limit`, `-Remaining`, `-Reset`. @default true */
  legacyHeaders: boolean
  /** IETF `RateLimit` fields; `true` means draft-6. @default false */
  standardHeaders: boolean | DraftHeadersVersion
  /** The quota's name in draft-8 headers. @default '<limit>-in-<window>', e.g. '5-in-1min' */
  identifier: string | ValueDeterminingMiddleware<string>
  /** Where the request's RateLimitInfo goes on `req`. @default 'rateLimit' */
  requestPropertyName: string
  /** Take back the hit of a failed response (status >= 400, error or closed early). @default false */
  skipFailedRequests: boolean
  /** Take back the hit of a successful response. @default false */
  skipSuccessfulRequests: boolean
  /** The request's key. @default ipKeyGenerator(req.ip, ipv6Subnet) */
  keyGenerator: ValueDeterminingMiddleware<string>
  /** Prefix length IPv6 clients are grouped by (32-64), a function, or `false`. @default 56 */
  ipv6Subnet: number | ValueDeterminingMiddleware<number> | false
  /** Answers rejected requests. @default sends `statusCode` and `message` */
  handler: RateLimitExceededEventHandler
  /** Requests it returns true for are not counted. @default () => false */
  skip: ValueDeterminingMiddleware<boolean>
  /** Decides success for the two skip options. @default res.statusCode < 400 */
  requestWasSuccessful: ValueDeterminingMiddleware<boolean>
  /** Where hits are counted. @default Sluice's MemoryStore, fixed windows from each key's first hit */
  store: Store | LegacyStore
  /** express-rate-limit's start-up checks; accepted and ignored. @default true */
  validate: boolean | EnabledValidations
  /** Pre-v6 name of `legacyHeaders`. @default undefined */
  headers?: boolean
  /** Older name of `limit`. @default undefined */
  max?: number | ValueDeterminingMiddleware<number>
  /** Let requests through (and log the error) when the store fails. @default false */
  passOnStoreError: boolean
  /** Where errors and warnings go. @default console */
  logger: Logger
}

/**
 * What `rateLimit` takes: express-rate-limit's options, each optional, and besides its stores
 * a Sluice Store (RedisStore, MemcachedStore, MemoryStore) as `store`.
 */
export type RateLimitOptions = Partial<Omit<Options, 'store'>> & {
  store?: Store | LegacyStore | SluiceStore
}

/** What the middleware puts on `req[requestPropertyName]`. */
export interface RateLimitInfo {
  limit: number
  used: number
  remaining: number
  resetTime: Date | undefined
  key: string
}

export type AugmentedRequest = Request & { [name: string]: RateLimitInfo }

/** The middleware, with express-rate-limit's `resetKey` and `getKey`. */
export type RateLimitRequestHandler = RequestHandler & {
  /** Forgets the key's hits. */
  resetKey(key: string): void
  /** The key's hits and reset time, without counting; undefined for a key never seen. */
  getKey(key: string): Awaitable<ClientRateLimitInfo | undefined>
}
