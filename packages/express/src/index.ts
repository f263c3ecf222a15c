/**
 * @sluice/express: the Express middleware, with Sluice's option names (express-rate-limit's are
 * kept by `@sluice/express/compat`).
 */
import { type Decision } from '@sluice/core'
import { type HttpLimitOptions, type HttpVerdict, type RejectVerdict } from '@sluice/http'
import { invalidOption } from '@sluice/core/adapter'
import { refusePeerNames, createRefusalJson, JSON_CONTENT_TYPE } from '@sluice/http'
import { createHttpLimiter } from '@sluice/rules'
import type { NextFunction, Request, RequestHandler, Response } from 'express'
import { decisionRecorder } from './decision-slot'
import { expressDefaults } from './framework'

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** The rate-limit decision for this request (under `requestPropertyName`). */
      rateLimit?: Decision
    }
  }
}

/** Sluice's HTTP options plus the Express middleware's own. */
export interface ExpressRateLimitOptions extends HttpLimitOptions<Request, Response> {
  /** Answers rate-limited requests instead of the JSON 429 (not ban or deny 403s). @default undefined */
  handler?: (req: Request, res: Response, next: NextFunction, decision: Decision) => unknown
  /** Where the decision goes on `req`. @default 'rateLimit' */
  requestPropertyName?: string
}

/** express-rate-limit's names for Sluice's options: refused here, kept by the compat entry. */
const EXPRESS_RATE_LIMIT_NAMES = {
  peer: 'express-rate-limit',
  compatEntry: '@sluice/express/compat',
  names: {
    windowMs: '`window`',
    max: '`limit`',
    keyGenerator: '`key` (it gets `req`)',
    passOnStoreError: "`onStoreError: 'allow'`",
  },
}

/** The middleware, plus `close()`: stops the rules file watcher it opened (`rules` as a path). */
export type RateLimitMiddleware = RequestHandler & {
  /**
   * Stops what the middleware started: the watcher of a `rules` file path (a RulesWatcher or
   * RuleSet you passed stays yours). Call it when the server shuts down. Idempotent.
   */
  close(): void
}

/** Sluice's options, without the middleware's own. */
function coreOptions(options: ExpressRateLimitOptions): HttpLimitOptions<Request, Response> {
  refusePeerNames(options, EXPRESS_RATE_LIMIT_NAMES)
  const { handler: _handler, requestPropertyName: _property, ...core } = options
  return core
}

/**
 * Express (4 and 5) rate-limit middleware. Options are checked here, once; a bad one throws a
 * ConfigError naming it.
 */
export function rateLimit(options: ExpressRateLimitOptions = {}): RateLimitMiddleware {
  const handler = options.handler
  if (handler !== undefined && typeof handler !== 'function') {
    invalidOption('handler', handler, 'a function')
  }
  const property = options.requestPropertyName ?? 'rateLimit'
  if (typeof property !== 'string' || property === '') {
    invalidOption('requestPropertyName', property, 'a non-empty string')
  }
  const core = coreOptions(options)
  const limiter = createHttpLimiter<Request, Response>(core, expressDefaults(handler !== undefined))
  const recordDecision = decisionRecorder(property)
  const refusalJson = createRefusalJson(core.message, (verdict) => JSON.stringify(verdict.body))

  /** A rate-limit rejection the user's `handler` answers (the others Sluice answers itself). */
  function handledByUser(verdict: RejectVerdict): boolean {
    return verdict.reason === 'limited' && handler !== undefined
  }

  /** Answers a rejection: its headers, status and JSON body (serialized once per distinct body). */
  function refuse(req: Request, res: Response, verdict: RejectVerdict): void {
    recordDecision(req, verdict.decision)
    for (const [name, value] of verdict.headers) res.setHeader(name, value)
    res.status(verdict.status)
    // res.json's own output only while the app keeps Express's default JSON settings.
    const app = req.app
    const json =
      app.get('json replacer') === undefined &&
      app.get('json spaces') === undefined &&
      !app.get('json escape')
        ? refusalJson(verdict)
        : undefined
    if (json === undefined) {
      res.json(verdict.body)
      return
    }
    res.setHeader('Content-Type', JSON_CONTENT_TYPE)
    res.send(json)
  }

  /**
   * A request decided at once goes on (or is answered) without a promise; a verdict still to
   * come is awaited in `settle`, as before.
   */
  function sluiceRateLimit(req: Request, res: Response, next: NextFunction): Promise<void> | void {
    let verdict: HttpVerdict | Promise<HttpVerdict>
    try {
      verdict = limiter.decideNow(req, res)
    } catch (error) {
      // Store failures (onStoreError 'throw') go to Express's error handling: a 500 by default.
      next(error)
      return
    }
    // Not through isPromise: this site's own feedback sees a verdict alone (no `then` lookup).
    if (typeof (verdict as { then?: unknown }).then === 'function')
      return settle(req, res, next, verdict as Promise<HttpVerdict>)
    verdict = verdict as HttpVerdict
    if (verdict.action === 'reject' && !handledByUser(verdict)) {
      refuseOrFail(req, res, next, verdict)
      return
    }
    if (verdict.action === 'reject') return apply(req, res, next, verdict)
    if (verdict.action === 'allow') {
      try {
        recordDecision(req, verdict.decision)
        // Indexed: a for-of with [name, value] cost about 0.1k instructions a request more.
        const headers = verdict.headers
        for (let i = 0; i < headers.length; i++) res.setHeader(headers[i][0], headers[i][1])
      } catch (error) {
        next(error)
        return
      }
    }
    // Outside the try: a throw of the middleware after this one is Express's own to handle.
    next()
  }

  /**
   * Answers a rejection; a throw while it is written (a `message` res.json cannot serialize)
   * goes to `next`, Express's error handling (a 500), on Express 4 as on 5: Express 4 ignores a
   * middleware's rejected promise, so the request would hang and the rejection end the process.
   */
  function refuseOrFail(req: Request, res: Response, next: NextFunction, verdict: RejectVerdict) {
    try {
      refuse(req, res, verdict)
    } catch (error) {
      next(error)
    }
  }

  async function settle(
    req: Request,
    res: Response,
    next: NextFunction,
    pending: Promise<HttpVerdict>,
  ): Promise<void> {
    let verdict: HttpVerdict
    try {
      verdict = await pending
    } catch (error) {
      next(error)
      return
    }
    return apply(req, res, next, verdict)
  }

  async function apply(
    req: Request,
    res: Response,
    next: NextFunction,
    verdict: HttpVerdict,
  ): Promise<void> {
    if (verdict.action === 'pass') {
      next()
      return
    }
    if (verdict.action === 'reject' && !handledByUser(verdict)) {
      refuseOrFail(req, res, next, verdict)
      return
    }
    try {
      recordDecision(req, verdict.decision)
      for (const [name, value] of verdict.headers) res.setHeader(name, value)
    } catch (error) {
      next(error)
      return
    }
    if (verdict.action === 'allow') {
      next()
      return
    }
    // A rate-limit rejection answered by the user's handler.
    try {
      await handler!(req, res, next, verdict.decision!)
    } catch (error) {
      next(error)
    }
  }
  return Object.assign(sluiceRateLimit, { close: () => limiter.close() })
}

export default rateLimit
export { ipKey, headerKey, userKey, combineKeys, normalizeIp } from '@sluice/http'
export type { Decision } from '@sluice/core'
export type { HttpLimitOptions, StandardHeadersDraft } from '@sluice/http'
