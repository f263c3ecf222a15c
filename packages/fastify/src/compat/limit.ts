/**
 * Owns one limit of the compat plugin (the plugin's, a route's, a decorator's): its
 * @fastify/rate-limit params mapped onto the options of Sluice's one HTTP pipeline, and the
 * pipeline's verdicts answered in the peer's shape (`createRateLimit`'s result). Counting is the
 * pipeline's: fixed windows from each key's first request, per-request `max`/`timeWindow`,
 * rejections in a row counted for `ban`, and `continueExceeding`/`exponentialBackoff` as its
 * `backoff`.
 */
import type { FastifyRequest } from 'fastify'
import { StoreError, systemClock, type Decision, type Store } from '@sluice/core'
import { MAX_SAFE_PRODUCT } from '@sluice/core/adapter'
import {
  createHttpLimiter,
  type HttpLimitOptions,
  type HttpLimiter,
  type Logger,
  type ResponseLike,
} from '@sluice/http'
import { normalizeIP } from './normalize-ip'
import { isPeerStore, NO_READ_MESSAGE } from './peer-store'
import type { RateLimitKey, RateLimitParams, RateLimitResult } from './types'

/** Where a limit counts: its store and the prefix of its keys there. */
export interface Placement {
  readonly store: Store
  readonly prefix: string
}

export interface Limit {
  readonly params: RateLimitParams
  /** Checks one request, counting it unless `increment` is false. */
  apply(request: FastifyRequest, callOptions?: { increment?: boolean }): Promise<RateLimitResult>
}

/**
 * The response the pipeline watches: none. A compat limit sets nothing that reads it (no
 * refunds, queue, shaping or concurrency), and `createRateLimit` has no reply to give.
 */
const UNWATCHED: ResponseLike = {
  writableFinished: false,
  destroyed: false,
  statusCode: 200,
  once: () => undefined,
  off: () => undefined,
}

/** Sluice keeps every time an exact integer in every store: a longer window is cut to 2^50 ms. */
const windowMs = (ms: number) => Math.min(Math.max(1, ms), MAX_SAFE_PRODUCT)

/** The store's own error, as the peer passes it on (Sluice wraps it in a StoreError). */
function storeFailure(error: unknown): unknown {
  return error instanceof StoreError && error.cause instanceof Error ? error.cause : error
}

/** The request's key as the key generator gave it (callbacks see a number as a number). */
async function rawKeyOf(request: FastifyRequest, params: RateLimitParams): Promise<RateLimitKey> {
  const key =
    params.keyGenerator !== undefined
      ? await params.keyGenerator(request)
      : normalizeIP(request.ip, params.ipv6Subnet)
  const config = request.routeOptions.config as { rateLimit?: { groupId?: string } } | undefined
  const groupId = config?.rateLimit?.groupId
  return groupId ? `${key}${groupId}` : key
}

async function allowListed(request: FastifyRequest, params: RateLimitParams, key: RateLimitKey) {
  const { allowList } = params
  if (allowList === undefined || allowList === null) return false
  if (typeof allowList === 'function') return Boolean(await allowList(request, key))
  return allowList.includes(key as string)
}

/** The pipeline's options for these params; `keys` keeps each request's key as generated. */
function pipelineOptions(
  params: RateLimitParams,
  { store, prefix }: Placement,
  logger: Logger,
  keys: WeakMap<FastifyRequest, RateLimitKey>,
): HttpLimitOptions<FastifyRequest> {
  const { max, timeWindow } = params
  const keyOf = (request: FastifyRequest) => keys.get(request)!
  // A peer store times its own windows (its continueExceeding and backoff are its own).
  const backoff = isPeerStore(store)
    ? undefined
    : params.continueExceeding === true
      ? 'restart'
      : params.exponentialBackoff === true
        ? 'double'
        : undefined
  return {
    algorithm: 'fixed-window',
    anchor: 'first-request',
    // max 0 refuses every request: as a per-request limit, the pipeline's way to say so.
    limit:
      typeof max === 'number'
        ? max === 0
          ? () => 0
          : max
        : async (request) => Math.max(0, Math.trunc(await max(request, keyOf(request)))),
    window:
      typeof timeWindow === 'number'
        ? windowMs(timeWindow)
        : async (request) => windowMs(await timeWindow(request, keyOf(request))),
    key: async (request) => {
      const key = await rawKeyOf(request, params)
      keys.set(request, key)
      return String(key)
    },
    allowList:
      params.allowList === undefined || params.allowList === null
        ? undefined
        : (request) => allowListed(request, params, keyOf(request)),
    store,
    prefix,
    clock: systemClock,
    breaker: false,
    logger,
    onStoreError: params.skipOnError === true ? 'allow' : 'throw',
    ban: params.ban === -1 ? undefined : params.ban,
    backoff,
    // The peer counts every request over the limit: `createRateLimit` reports them.
    countRefusals: true,
    // The compat entry writes the peer's headers and errors itself.
    legacyHeaders: false,
    standardHeaders: false,
    retryAfterHeader: false,
  }
}

function exceeded(key: RateLimitKey, decision: Decision, banned: boolean): RateLimitResult {
  const ttl = decision.retryAfterMs
  return {
    isAllowed: false,
    key,
    max: decision.limit,
    timeWindow: decision.policy.windowMs,
    remaining: 0,
    ttl,
    ttlInSeconds: Math.ceil(ttl / 1000),
    isExceeded: true,
    isBanned: banned,
  }
}

/** `current` requests counted in the key's window, as the peer's stores answer. */
function counted(
  key: RateLimitKey,
  decision: Decision,
  current: number,
  ban: number,
): RateLimitResult {
  const max = decision.limit
  const ttl = current === 0 ? 0 : decision.resetMs
  return {
    isAllowed: false,
    key,
    max,
    timeWindow: decision.policy.windowMs,
    remaining: Math.max(0, max - current),
    ttl,
    ttlInSeconds: Math.ceil(ttl / 1000),
    isExceeded: current > max,
    isBanned: ban !== -1 && current - max > ban,
  }
}

export function createLimit(params: RateLimitParams, placement: Placement, logger: Logger): Limit {
  const keys = new WeakMap<FastifyRequest, RateLimitKey>()
  const http: HttpLimiter<FastifyRequest> = createHttpLimiter(
    pipelineOptions(params, placement, logger, keys),
    { framework: 'Fastify', resetStyle: 'delta', customRejection: true },
  )
  const { store } = placement
  const rawKey = (request: FastifyRequest, key: string) => keys.get(request) ?? key

  async function count(request: FastifyRequest): Promise<RateLimitResult> {
    const verdict = await http.decide(request, UNWATCHED).catch((error: unknown) => {
      throw storeFailure(error)
    })
    if (verdict.action === 'pass') return { isAllowed: true, key: keys.get(request)! }
    const key = rawKey(request, verdict.key)
    const decision = verdict.decision!
    if (verdict.action === 'allow') {
      const current = decision.degraded ? 0 : decision.limit - decision.remaining
      return counted(key, decision, current, params.ban)
    }
    return exceeded(key, decision, verdict.reason === 'banned')
  }

  async function read(request: FastifyRequest): Promise<RateLimitResult> {
    if (isPeerStore(store) && typeof store.fastifyStore.read !== 'function')
      throw new Error(NO_READ_MESSAGE)
    const checked = await http.check(request).catch((error: unknown) => {
      throw storeFailure(error)
    })
    if (checked === undefined) return { isAllowed: true, key: keys.get(request)! }
    const { decision, refusals } = checked
    const current = decision.limit - decision.remaining + refusals
    return counted(rawKey(request, checked.key), decision, current, params.ban)
  }

  return {
    params,
    apply: (request, callOptions) =>
      callOptions?.increment === false ? read(request) : count(request),
  }
}
