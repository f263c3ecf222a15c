/**
 * @sluice/express/compat: express-rate-limit 8's `rateLimit`, its options, defaults, headers,
 * `req.rateLimit` and stores, on Sluice's one pipeline. Moving over is a change of import.
 */
import { SluiceError, type Decision, type Limiter } from '@sluice/core'
import { type HttpVerdict } from '@sluice/http'
import { createHttpLimiter } from '@sluice/rules'
import type { NextFunction, Request, Response } from 'express'
import { decisionRecorder } from '../decision-slot'
import { expressDefaults } from '../framework'
import { canWriteHeaders, quotaNamer, writeHeaders, writeRetryAfter } from './headers'
import { resolveCompatOptions, type CompatSettings } from './options'
import { proxyReporter } from './validations'
import type {
  ClientRateLimitInfo,
  RateLimitInfo,
  RateLimitOptions,
  RateLimitRequestHandler,
  Store,
} from './types'

/** express-rate-limit's view of a decision; `current` (its older name of `used`) is hidden. */
function infoOf(decision: Decision, key: string): RateLimitInfo {
  // A rejected request is the one over the limit, whether or not the store counted it.
  const used = decision.limit - decision.remaining + (decision.allowed ? 0 : 1)
  const info: RateLimitInfo = {
    limit: decision.limit,
    used,
    remaining: decision.remaining,
    resetTime: new Date(decision.at + decision.resetMs),
    key,
  }
  return Object.defineProperty(info, 'current', { value: used, enumerable: false })
}

/** `limit: 0`: nothing is counted, every request is over. */
function refusedInfo(key: string, windowMs: number): RateLimitInfo {
  const info: RateLimitInfo = {
    limit: 0,
    used: 1,
    remaining: 0,
    resetTime: new Date(Date.now() + windowMs),
    key,
  }
  return Object.defineProperty(info, 'current', { value: 1, enumerable: false })
}

/** Calls the store's `init` once, logging (not throwing) its failures, as express-rate-limit does. */
function initStore(settings: CompatSettings): void {
  const peer = settings.peerStore?.expressStore as Partial<Store> | undefined
  if (typeof peer?.init !== 'function') return
  try {
    const started = peer.init(settings.options)
    if (started instanceof Promise) {
      started.catch((error: unknown) =>
        settings.logger.error(
          error,
          'express-rate-limit: async error during store initialization.',
        ),
      )
    }
  } catch (error) {
    settings.logger.error(error, 'express-rate-limit: error during store initialization.')
  }
}

/**
 * express-rate-limit's middleware: a drop-in for `rateLimit` from 'express-rate-limit' 8.
 * Counting, windows and stores go through Sluice's pipeline (fixed windows from each key's
 * first hit); headers, `req.rateLimit` and rejections are written as express-rate-limit does.
 */
export function rateLimit(passed?: RateLimitOptions): RateLimitRequestHandler {
  const settings = resolveCompatOptions(passed)
  const { options, headers, peerStore } = settings
  const http = createHttpLimiter<Request>(settings.core, {
    ...expressDefaults(true),
    // The default keyGenerator keys by req.ip: X-Forwarded-For without trust proxy is checked.
    keysByIp: passed?.keyGenerator === undefined,
    report: proxyReporter(options.validate, settings.logger),
  })
  const record = decisionRecorder<RateLimitInfo>(settings.property)
  initStore(settings)

  const quotaNameOf = quotaNamer(settings)

  /** Records the info and writes the headers of a counted request. */
  async function report(req: Request, res: Response, info: RateLimitInfo, now: number) {
    record(req, info)
    if (!canWriteHeaders(res)) return
    const name = headers.draft === 'draft-8' ? await quotaNameOf(req, res, info) : ''
    writeHeaders(res, info, now, headers, name)
  }

  async function answer(req: Request, res: Response, next: NextFunction, verdict: HttpVerdict) {
    if (verdict.action === 'pass') return next()
    const decision = verdict.decision
    // passOnStoreError: the store failed and the request goes on uncounted, as it does there.
    if (decision?.degraded) return next()
    const now = decision?.at ?? Date.now()
    const info =
      decision === undefined
        ? refusedInfo(verdict.key, headers.windowMs)
        : infoOf(decision, verdict.key)
    await report(req, res, info, now)
    if (verdict.action === 'allow') return next()
    // An express-rate-limit store counted the rejected hit too; a 429 is a failed response.
    if (peerStore !== undefined && options.skipFailedRequests) {
      await peerStore.takeBack(verdict.key)
    }
    if (canWriteHeaders(res)) writeRetryAfter(res, info, now, headers)
    await settings.handler(req, res, next, options)
  }

  async function expressRateLimitCompat(req: Request, res: Response, next: NextFunction) {
    try {
      await answer(req, res, next, await http.decide(req, res))
    } catch (error) {
      next(error)
    }
  }

  function getKey(
    key: string,
  ): Promise<ClientRateLimitInfo | undefined> | ClientRateLimitInfo | undefined {
    if (peerStore !== undefined) return peerStore.get(key)
    return peekInfo(fixedLimiter('getKey'), key)
  }

  /** The limiter of a fixed limit; with a limit function there is one per limit (no one key state). */
  function fixedLimiter(method: string): Limiter {
    if (http.limiter !== undefined) return http.limiter
    throw new SluiceError(
      'ERR_SLUICE_UNSUPPORTED',
      `${method} needs a fixed \`limit\` or an express-rate-limit store; with a limit function, Sluice's store keeps a state per limit`,
    )
  }

  async function peekInfo(limiter: Limiter, key: string): Promise<ClientRateLimitInfo> {
    const decision = await limiter.peek(key)
    return {
      totalHits: decision.limit - decision.remaining,
      resetTime: new Date(decision.at + decision.resetMs),
    }
  }

  function resetKey(key: string): void {
    // An express-rate-limit store is told at once (its callers expect that); Sluice's via the limiter.
    if (peerStore !== undefined) {
      void Promise.resolve(peerStore.expressStore.resetKey(key)).catch((error: unknown) =>
        settings.logger.error(error, '[sluice] resetKey failed'),
      )
      return
    }
    void fixedLimiter('resetKey')
      .reset(key)
      .catch((error: unknown) => settings.logger.error(error, '[sluice] resetKey failed'))
  }

  return Object.assign(expressRateLimitCompat, { getKey, resetKey })
}

export default rateLimit
export { ipKeyGenerator } from './ip-key'
export { SECOND, MINUTE, HOUR, DAY } from './time'
/**
 * express-rate-limit's `MemoryStore` interface (`increment`, `decrement`, `get`, `resetKey`,
 * `resetAll`, `shutdown`) on Sluice's core store. Without a `store` option the middleware counts
 * in Sluice's MemoryStore directly.
 */
export { MemoryStore } from './memory-store'
export type {
  AugmentedRequest,
  ClientRateLimitInfo,
  DraftHeadersVersion,
  EnabledValidations,
  IncrementCallback,
  IncrementResponse,
  LegacyStore,
  Logger,
  Options,
  RateLimitExceededEventHandler,
  RateLimitInfo,
  RateLimitOptions,
  RateLimitRequestHandler,
  Store,
  ValueDeterminingMiddleware,
} from './types'
