/**
 * Owns the module's public option shapes: @nestjs/throttler 6's, plus what Sluice adds (an
 * algorithm, more limits, cost, a store, store-failure and shadow modes).
 */
import type { ExecutionContext, ModuleMetadata, Type } from '@nestjs/common'
import type {
  AlgorithmName,
  Clock,
  DecisionHook,
  LimitOptions,
  Store,
  StoreErrorMode,
} from '@sluice/core'
import type { Logger } from '@sluice/http'
import type { ThrottlerStorage, ThrottlerStorageRecord } from './storage'

type Awaitable<T> = T | Promise<T>

/** A value, or a function of the request's context that computes it. */
export type Resolvable<T extends number | string | boolean> =
  T | ((context: ExecutionContext) => T | Promise<T>)

/** The tracker (who is counted) of a request: the client IP unless overridden. */
export type ThrottlerGetTrackerFunction = (
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- @nestjs/throttler's own type: a platform's request
  req: Record<string, any>,
  context: ExecutionContext,
) => Promise<string> | string

/** The storage key of a tracker under one throttler. */
export type ThrottlerGenerateKeyFunction = (
  context: ExecutionContext,
  trackerString: string,
  throttlerName: string,
) => string

/** What Sluice adds to a throttler (and, as defaults for every throttler, to the module). */
export interface SluiceThrottlerExtras {
  /**
   * How requests are counted. The default counts each request for exactly `ttl` ms, as
   * @nestjs/throttler's own storage does, up to a limit of 100; a larger limit is counted by
   * sliding-window's two counters per key instead of a log of `limit` timestamps.
   * @default 'sliding-log' (limit <= 100), else 'sliding-window'
   */
  algorithm?: AlgorithmName
  /** Capacity of token-bucket, gcra and leaky-bucket. @default limit */
  burst?: number
  /**
   * More limits enforced with `limit`/`ttl` in the same all-or-nothing store call (e.g. 10 per
   * second and 1000 per day). The binding one fills the headers.
   * @default undefined
   */
  limits?: readonly LimitOptions[]
  /** Units a request takes: a positive integer or a function of the context. @default 1 */
  cost?: Resolvable<number>
  /** Where the counters live (a Redis, memcached or memory store; a local tier). @default the module's `store`, else one MemoryStore */
  store?: Store
  /** When the store fails: `'throw'` (500), `'allow'`, `'deny'` or a fallback limiter. @default 'throw' */
  onStoreError?: StoreErrorMode
  /** Count and report, never refuse: `decision.shadow` says what enforcing would answer. @default false */
  shadow?: boolean
}

/** One named throttler. */
export interface ThrottlerOptions extends SluiceThrottlerExtras {
  /** Its name, suffixed to its headers unless `'default'`. @default 'default' */
  name?: string
  /** Requests allowed per `ttl`: a positive integer, or a function of the context. */
  limit: Resolvable<number>
  /** The window, in milliseconds (`seconds(60)`): a positive integer or a function of the context. */
  ttl: Resolvable<number>
  /** How long a key over its limit stays refused, in ms. @default ttl */
  blockDuration?: Resolvable<number>
  /** Requests whose User-Agent matches one of these are not limited. @default undefined */
  ignoreUserAgents?: RegExp[]
  /** Requests for which it returns true are not limited by this throttler. @default undefined */
  skipIf?: (context: ExecutionContext) => boolean
  /** Who is counted. @default the guard's getTracker (the client IP) */
  getTracker?: ThrottlerGetTrackerFunction
  /** The storage key. @default the guard's generateKey (sha256 of class, handler, name, tracker) */
  generateKey?: ThrottlerGenerateKeyFunction
  /** Whether to set the X-RateLimit-* and Retry-After headers. @default true */
  setHeaders?: boolean
}

/** The rate-limit details a rejection knows (for `errorMessage`). */
export interface ThrottlerLimitDetail extends ThrottlerStorageRecord {
  /** The throttler's window, in ms. */
  ttl: number
  limit: number
  key: string
  tracker: string
}

/** The module's options in object form. */
export interface ThrottlerModuleObjectOptions {
  /** @default undefined */
  ignoreUserAgents?: RegExp[]
  /** @default undefined */
  skipIf?: (context: ExecutionContext) => boolean
  /** @default the guard's getTracker (the client IP) */
  getTracker?: ThrottlerGetTrackerFunction
  /** @default the guard's generateKey */
  generateKey?: ThrottlerGenerateKeyFunction
  /** The 429's message, or a function of the context and the limit's details. @default 'ThrottlerException: Too Many Requests' */
  errorMessage?:
    string | ((context: ExecutionContext, throttlerLimitDetail: ThrottlerLimitDetail) => string)
  /**
   * A @nestjs/throttler storage (its `increment` interface): counting then goes through it, as
   * it did before. Leave it out to count in a Sluice store (`store`).
   * @default a ThrottlerStorageService over `store`
   */
  storage?: ThrottlerStorage
  /** The named throttlers. */
  throttlers: Array<ThrottlerOptions>
  /** @default true */
  setHeaders?: boolean
  /** Where every throttler counts unless it names its own. @default new MemoryStore() */
  store?: Store
  /** Every throttler's default. @default 'throw' */
  onStoreError?: StoreErrorMode
  /** Every throttler's default. @default false */
  shadow?: boolean
  /** Receives one-time warnings (a ttl that looks like seconds, a bad tracker). @default console */
  logger?: Logger
  /** Source of time in ms (tests inject a fake one). @default Date.now */
  clock?: Clock
  /** Called with every decision's event (metrics; see docs/observability.md). @default undefined */
  onDecision?: DecisionHook
}

/** The array form (throttlers only) or the object form. */
export type ThrottlerModuleOptions = Array<ThrottlerOptions> | ThrottlerModuleObjectOptions

export interface ThrottlerOptionsFactory {
  createThrottlerOptions(): Awaitable<ThrottlerModuleOptions>
}

export interface ThrottlerAsyncOptions extends Pick<ModuleMetadata, 'imports'> {
  /** An existing provider that creates the options. */
  useExisting?: Type<ThrottlerOptionsFactory>
  /** A class to instantiate that creates the options. */
  useClass?: Type<ThrottlerOptionsFactory>
  /** A factory of the options. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- Nest's injected arguments
  useFactory?: (...args: any[]) => Awaitable<ThrottlerModuleOptions>
  /** Providers injected into `useFactory`. */
  inject?: Array<string | symbol | Type | ((...args: never[]) => unknown)>
}

/** What `handleRequest` gets for one throttler. */
export interface ThrottlerRequest {
  context: ExecutionContext
  limit: number
  /** ms */
  ttl: number
  throttler: ThrottlerOptions
  /** ms */
  blockDuration: number
  getTracker: ThrottlerGetTrackerFunction
  generateKey: ThrottlerGenerateKeyFunction
}
