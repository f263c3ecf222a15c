/**
 * @sluice/express: the Express middleware, with express-rate-limit's option names accepted.
 */
import {
  checkAliasLimit,
  checkAliasMs,
  createHttpLimiter,
  checkAlias,
  invalidOption,
  type Decision,
  type HttpLimitOptions,
  type HttpVerdict,
  type ProxyTrust,
  isPromise,
} from '@sluice/core'
import type { NextFunction, Request, RequestHandler, Response } from 'express'
import { IncomingMessage } from 'node:http'

type Awaitable<T> = T | Promise<T>

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** The rate-limit decision for this request (under `requestPropertyName`). */
      rateLimit?: Decision
    }
  }
}

/** Sluice's options plus express-rate-limit's names, so moving over is a change of import. */
export interface ExpressRateLimitOptions extends HttpLimitOptions<Request> {
  /** express-rate-limit alias of `window` (ms). @default 60000 */
  windowMs?: number
  /** express-rate-limit alias of `limit`; a function gets `(req, res)`. @default 100 */
  max?: number | ((req: Request, res: Response) => Awaitable<number>)
  /** express-rate-limit alias of `key`; gets `(req, res)`. @default the client IP, IPv6 by /64 */
  keyGenerator?: (req: Request, res: Response) => Awaitable<string>
  /** Answers rate-limited requests instead of the JSON 429 (not ban or deny 403s). @default undefined */
  handler?: (req: Request, res: Response, next: NextFunction, decision: Decision) => unknown
  /** Where the decision goes on `req`. @default 'rateLimit' */
  requestPropertyName?: string
  /** express-rate-limit alias: `true` means `onStoreError: 'allow'`. @default false */
  passOnStoreError?: boolean
}

/** The middleware, plus `close()`: stops the rules file watcher it opened (`rules` as a path). */
export type RateLimitMiddleware = RequestHandler & {
  /**
   * Stops what the middleware started: the watcher of a `rules` file path (a RulesWatcher or
   * RuleSet you passed stays yours). Call it when the server shuts down. Idempotent.
   */
  close(): void
}

function trustOf(req: Request): ProxyTrust {
  const setting: unknown = req.app.get('trust proxy')
  if (setting === true) return 'all'
  return setting ? 'some' : 'none'
}

const PROXY_HINT =
  "set app.set('trust proxy', '<your proxy's address or CIDR>'), e.g. '10.0.0.1' or 'loopback', or app.set('trust proxy', 1) for exactly one proxy hop."

/** A decision property's accessor on Express's shared request prototype, and the map behind it. */
interface DecisionSlot {
  decisions: WeakMap<object, unknown>
  get: (this: object) => unknown
}

/** One slot per property name, shared by every middleware that writes under that name. */
const slots = new Map<string, DecisionSlot>()

function slotFor(property: string): DecisionSlot {
  let slot = slots.get(property)
  if (slot === undefined) {
    const decisions = new WeakMap<object, unknown>()
    slot = {
      decisions,
      get() {
        return decisions.get(this)
      },
    }
    slots.set(property, slot)
  }
  return slot
}

/**
 * The request prototype Express shares between its apps (the one just above IncomingMessage's),
 * or undefined when `prototype` is not an Express request's.
 */
function sharedRequestPrototype(prototype: object | null): object | undefined {
  while (prototype !== null) {
    const parent = Object.getPrototypeOf(prototype) as object | null
    if (parent === IncomingMessage.prototype) return prototype
    prototype = parent
  }
  return undefined
}

/** Installs the slot's accessor where every app's requests see it; false where it cannot go. */
function installAccessor(prototype: object, property: string, slot: DecisionSlot): boolean {
  const shared = sharedRequestPrototype(prototype)
  if (shared === undefined) return false
  const existing = Object.getOwnPropertyDescriptor(shared, property)
  if (existing !== undefined) return existing.get === slot.get
  // A name used elsewhere on the chain (a stream method, say) must not be shadowed.
  if (property in shared) return false
  const { decisions } = slot
  Object.defineProperty(shared, property, {
    configurable: true,
    get: slot.get,
    set(this: object, value: unknown) {
      decisions.set(this, value)
    },
  })
  return true
}

/**
 * Returns how a middleware puts its decision on `req[property]`. Express gives each request its
 * app's prototype (Object.setPrototypeOf) and then adds properties to it, after which V8 gives
 * every request a hidden class of its own: adding `req.rateLimit` builds yet another (16-20k
 * more instructions per request, 3-4% of a hello-world's, in side-by-side callgrind counts). So
 * the decision goes into a WeakMap, without touching the request, and is read (and written)
 * through an accessor installed once on Express's shared request prototype, below every app's,
 * so it stays visible when a mounted sub-app swaps prototypes.
 */
function decisionRecorder(
  property: string,
): (req: Request, decision: Decision | undefined) => void {
  const slot = slotFor(property)
  const accessorFor = new WeakMap<object, boolean>()
  let lastPrototype: object | undefined
  let lastHasAccessor = false
  return function recordDecision(req, decision) {
    const prototype = Object.getPrototypeOf(req) as object
    let firstSight = false
    if (prototype !== lastPrototype) {
      let hasAccessor = accessorFor.get(prototype)
      firstSight = hasAccessor === undefined
      if (hasAccessor === undefined) {
        hasAccessor = installAccessor(prototype, property, slot)
        accessorFor.set(prototype, hasAccessor)
      }
      lastPrototype = prototype
      lastHasAccessor = hasAccessor
    }
    // A request seen before the accessor existed may hold an own property an earlier write
    // left; a plain assignment goes through the setter, or onto that property, to be read back.
    if (lastHasAccessor && !firstSight) slot.decisions.set(req, decision)
    else (req as unknown as Record<string, unknown>)[property] = decision
  }
}

/** Maps express-rate-limit names onto Sluice's, once. */
function normalize(options: ExpressRateLimitOptions): HttpLimitOptions<Request> {
  const {
    windowMs,
    max,
    keyGenerator,
    handler: _handler,
    requestPropertyName: _property,
    passOnStoreError,
    ...rest
  } = options
  const result: HttpLimitOptions<Request> = { ...rest }
  if (windowMs !== undefined) {
    checkAlias('windowMs', windowMs, 'window', rest.window)
    checkAliasMs(windowMs, 'windowMs')
    result.window = windowMs
  }
  if (max !== undefined) {
    checkAlias('max', max, 'limit', rest.limit)
    checkAliasLimit(max, 'max')
    result.limit = typeof max === 'function' ? (req) => max(req, req.res!) : max
  }
  if (keyGenerator !== undefined) {
    checkAlias('keyGenerator', keyGenerator, 'key', rest.key)
    if (typeof keyGenerator !== 'function')
      invalidOption('keyGenerator', keyGenerator, 'a function')
    result.key = (req) => keyGenerator(req, req.res!)
  }
  if (passOnStoreError !== undefined) {
    checkAlias('passOnStoreError', passOnStoreError, 'onStoreError', rest.onStoreError)
    result.onStoreError = passOnStoreError ? 'allow' : 'throw'
  }
  return result
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
  const limiter = createHttpLimiter<Request>(normalize(options), {
    framework: 'Express',
    resetStyle: 'epoch',
    proxyTrust: trustOf,
    peerAddress: (req) => req.socket?.remoteAddress,
    proxyHint: PROXY_HINT,
    customRejection: handler !== undefined,
  })
  const recordDecision = decisionRecorder(property)

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
    if (isPromise(verdict)) return settle(req, res, next, verdict)
    if (verdict.action === 'reject') return apply(req, res, next, verdict)
    try {
      if (verdict.action === 'allow') {
        recordDecision(req, verdict.decision)
        for (const [name, value] of verdict.headers) res.setHeader(name, value)
      }
      next()
    } catch (error) {
      // As the async middleware did: a throw here becomes its rejected promise.
      return Promise.reject(error)
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
    recordDecision(req, verdict.decision)
    for (const [name, value] of verdict.headers) res.setHeader(name, value)
    if (verdict.action === 'allow') {
      next()
      return
    }
    if (verdict.reason === 'limited' && handler !== undefined) {
      try {
        await handler(req, res, next, verdict.decision!)
      } catch (error) {
        next(error)
      }
      return
    }
    res.status(verdict.status).json(verdict.body)
  }
  return Object.assign(sluiceRateLimit, { close: () => limiter.close() })
}

export default rateLimit
export { ipKey, headerKey, userKey, combineKeys } from '@sluice/core'
export type { Decision, HttpLimitOptions, StandardHeadersDraft } from '@sluice/core'
