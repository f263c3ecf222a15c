/**
 * Owns resolving express-rate-limit's options, once, at creation: its defaults (5 requests a
 * minute, fixed windows from each key's first hit, IPv6 by /56), its lenient handling of
 * out-of-range numbers (the default, with a warning), and the Sluice options they map onto.
 */
import type { Store as SluiceStore } from '@sluice/core'
import type { HttpLimitOptions } from '@sluice/http'
import { checkPositiveInteger, invalidOption } from '@sluice/core/adapter'
import { checkStandardHeaders } from '@sluice/http'
import { CONSOLE_LOGGER, checkLogger, EXPRESS_RATE_LIMIT_OPTIONS } from './declared-options'
import type { Request, Response } from 'express'
import type { HeaderSettings } from './headers'
import { quotaName } from './headers'
import { ipKeyGenerator } from './ip-key'
import { checkPeerStore, isPeerStore, PeerStore } from './peer-store'
import type {
  DraftHeadersVersion,
  Logger,
  Options,
  RateLimitExceededEventHandler,
  RateLimitOptions,
  ValueDeterminingMiddleware,
} from './types'

const DEFAULTS = EXPRESS_RATE_LIMIT_OPTIONS.table
const DEFAULT_WINDOW_MS = DEFAULTS.windowMs.default as number
const DEFAULT_LIMIT = DEFAULTS.limit.default as number
const DEFAULT_SUBNET = DEFAULTS.ipv6Subnet.default as number
const DRAFTS: readonly DraftHeadersVersion[] = ['draft-6', 'draft-7', 'draft-8']

/** Everything the compatibility middleware reads per request, resolved once. */
export interface CompatSettings {
  /** The options as express-rate-limit resolves them: given to `store.init` and `handler`. */
  readonly options: Options
  /** What the Sluice pipeline is created with. */
  readonly core: HttpLimitOptions<Request>
  /** The express-rate-limit store, when one was given. */
  readonly peerStore: PeerStore | undefined
  readonly headers: HeaderSettings
  readonly property: string
  readonly logger: Logger
  readonly handler: RateLimitExceededEventHandler
  readonly identifier: Options['identifier'] | undefined
}

type Given = RateLimitOptions & Record<string, unknown>

/** The options as the declaration resolves them: checked, simple defaults filled in, frozen. */
type Settled = Readonly<Options>

/** A number express-rate-limit would take: otherwise its default, with a warning. */
function lenientNumber(
  name: string,
  value: unknown,
  fallback: number,
  valid: (n: number) => boolean,
  logger: Logger,
): number {
  if (value === undefined) return fallback
  if (typeof value === 'number' && valid(value)) return value
  logger.warn(
    new RangeError(`\`${name}\` is ${String(value)}; using the default, ${fallback}`),
    `[sluice] express-rate-limit compatibility: \`${name}\` out of range`,
  )
  return fallback
}

function draftOf(value: unknown, logger: Logger): DraftHeadersVersion | undefined {
  if (value === undefined || value === false) return undefined
  if (value === true) return 'draft-6'
  if (DRAFTS.includes(value as DraftHeadersVersion)) return value as DraftHeadersVersion
  try {
    checkStandardHeaders(value)
  } catch (error) {
    // As express-rate-limit: an unknown draft sends no standard headers, and is reported.
    logger.warn(error, '[sluice] express-rate-limit compatibility: unknown standardHeaders')
  }
  return undefined
}

/** The IPv6 grouping: 32-64 bits, a function of the request, or false; else /56 and a warning. */
function subnetOf(value: unknown, logger: Logger): Options['ipv6Subnet'] {
  if (value === undefined || value === false || typeof value === 'function') {
    return (value ?? DEFAULT_SUBNET) as Options['ipv6Subnet']
  }
  if (typeof value === 'number' && Number.isInteger(value) && value >= 32 && value <= 64) {
    return value
  }
  const error = Object.assign(
    new RangeError(
      `\`ipv6Subnet\` must be an integer from 32 to 64, or false; got ${String(value)}`,
    ),
    { code: 'ERR_ERL_IPV6_SUBNET' },
  )
  logger.error(error)
  return DEFAULT_SUBNET
}

/** The default key: the client IP, IPv6 grouped by `ipv6Subnet`; no IP falls back to Sluice's key. */
function ipKeyOf(subnet: Options['ipv6Subnet']): ValueDeterminingMiddleware<string | undefined> {
  return async (req, res) => {
    const ip = req.ip
    if (ip === undefined || ip === '') return undefined
    const bits = typeof subnet === 'function' ? await subnet(req, res) : subnet
    return ipKeyGenerator(ip, bits)
  }
}

/** Sends `statusCode` with `message` (a string as text, anything else as JSON), as express-rate-limit does. */
function defaultHandler(settings: () => Options): RateLimitExceededEventHandler {
  return async (req, res) => {
    const { statusCode, message } = settings()
    res.status(statusCode)
    const body: unknown =
      typeof message === 'function'
        ? await (message as ValueDeterminingMiddleware<unknown>)(req, res)
        : message
    if (!res.writableEnded) res.send(body)
  }
}

/** A function of (req, res) as Sluice's (req) => …: the response is `req.res`. */
function withResponse<T>(fn: ValueDeterminingMiddleware<T>): (req: Request) => T | Promise<T> {
  return (req) => fn(req, req.res as Response)
}

/**
 * A limit function's answer, which must be a positive integer here: a 0 (which the pipeline
 * would answer as a refusal) is a ConfigError handed to `next`, never a silent pass or refusal.
 */
function positiveLimit(limit: (req: Request) => unknown): (req: Request) => Promise<number> {
  return async (req) => checkPositiveInteger(await limit(req), 'limit')
}

/** The given options express-rate-limit knows (the others are warned about and ignored). */
function knownOf(given: Given): Options {
  const names = EXPRESS_RATE_LIMIT_OPTIONS.names
  return Object.fromEntries(
    Object.entries(given).filter(([name]) => names.includes(name)),
  ) as unknown as Options
}

function warnUnknown(given: Given, logger: Logger): void {
  for (const name of Object.keys(given)) {
    if (!EXPRESS_RATE_LIMIT_OPTIONS.names.includes(name)) {
      logger.warn(
        new Error(`unknown option \`${name}\``),
        `[sluice] express-rate-limit compatibility: \`${name}\` is not an express-rate-limit option and is ignored`,
      )
    }
  }
}

/** The limit: 0 refuses all, a bad number falls back to 5, a function is asked per request. */
function limitOf(given: Given, logger: Logger): Options['limit'] {
  const limit = given.limit ?? given.max
  if (typeof limit === 'function') return limit
  return lenientNumber(
    'limit',
    limit,
    DEFAULT_LIMIT,
    (n) => Number.isSafeInteger(n) && n >= 0,
    logger,
  )
}

/** The store: an express-rate-limit store (wrapped), a Sluice Store (as is), or Sluice's default. */
function storeOf(
  store: unknown,
  passOnStoreError: boolean,
  logger: Logger,
): { peer: PeerStore | undefined; sluice: SluiceStore | undefined } {
  if (store === undefined) return { peer: undefined, sluice: undefined }
  if (!isPeerStore(store)) {
    if (typeof store === 'object' && store !== null)
      return { peer: undefined, sluice: store as SluiceStore }
    invalidOption('store', store, 'an express-rate-limit store or a Sluice Store')
  }
  checkPeerStore(store)
  const onFailure = passOnStoreError
    ? (error: unknown) =>
        logger.error(
          error,
          'express-rate-limit: error from store, allowing request without rate-limiting.',
        )
    : undefined
  const peer = new PeerStore(store, onFailure)
  return { peer, sluice: peer }
}

/** The options as express-rate-limit resolves them, its defaults filled in. */
function peerOptions(
  given: Given,
  settled: Settled,
  logger: Logger,
  store: SluiceStore | undefined,
): Options {
  const windowMs = lenientNumber(
    'windowMs',
    given.windowMs,
    DEFAULT_WINDOW_MS,
    (n) => Number.isSafeInteger(n) && n > 0,
    logger,
  )
  const property = settled.requestPropertyName
  const ipv6Subnet = subnetOf(given.ipv6Subnet, logger)
  const options: Options = {
    ...given,
    windowMs,
    limit: limitOf(given, logger),
    message: settled.message,
    statusCode: settled.statusCode,
    legacyHeaders:
      given.legacyHeaders ?? given.headers ?? (DEFAULTS.legacyHeaders.default as boolean),
    standardHeaders:
      draftOf(given.standardHeaders, logger) ?? (DEFAULTS.standardHeaders.default as false),
    identifier: given.identifier ?? ((req) => quotaName(limitFromInfo(req, property), windowMs)),
    requestPropertyName: property,
    skipFailedRequests: settled.skipFailedRequests,
    skipSuccessfulRequests: settled.skipSuccessfulRequests,
    keyGenerator: given.keyGenerator ?? (ipKeyOf(ipv6Subnet) as ValueDeterminingMiddleware<string>),
    ipv6Subnet,
    handler: given.handler ?? defaultHandler(() => options),
    skip: given.skip ?? (() => false),
    requestWasSuccessful: given.requestWasSuccessful ?? ((_req, res) => res.statusCode < 400),
    // A Sluice Store shows as is; express-rate-limit's Options type has no place for it.
    store: (given.store ?? store) as Options['store'],
    validate: settled.validate,
    passOnStoreError: settled.passOnStoreError,
    logger,
  }
  return options
}

/**
 * The Sluice pipeline's options: fixed windows from each key's first hit, the compat entry's
 * own headers and answers (so the pipeline writes none), Date.now() read per request.
 */
function coreOptions(
  options: Options,
  given: Given,
  store: SluiceStore | undefined,
): HttpLimitOptions<Request> {
  const { limit, ipv6Subnet, logger } = options
  const succeeded = given.requestWasSuccessful
  return {
    algorithm: 'fixed-window',
    anchor: 'first-request',
    window: options.windowMs,
    limit: typeof limit === 'function' ? positiveLimit(withResponse(limit)) : Math.max(1, limit),
    key: withResponse(options.keyGenerator),
    ipv6Subnet: typeof ipv6Subnet === 'number' ? ipv6Subnet : DEFAULT_SUBNET,
    skip: given.skip === undefined ? undefined : withResponse(given.skip),
    // limit 0: every request is refused before anything is counted.
    denyList: limit === 0 ? () => true : undefined,
    store,
    clock: () => Date.now(),
    skipSuccessfulRequests: options.skipSuccessfulRequests,
    skipFailedRequests: options.skipFailedRequests,
    requestWasSuccessful:
      succeeded === undefined ? undefined : (req, res) => succeeded(req, res as Response),
    onStoreError: options.passOnStoreError ? 'allow' : 'throw',
    standardHeaders: false,
    legacyHeaders: false,
    retryAfterHeader: false,
    logger: { warn: (message) => logger.warn(message) },
  }
}

/** Resolves express-rate-limit's options once; the given object is not changed. */
export function resolveCompatOptions(passed: RateLimitOptions | undefined): CompatSettings {
  if (passed !== undefined && (typeof passed !== 'object' || passed === null)) {
    invalidOption('options', passed, 'an object')
  }
  const given: Given = Object.fromEntries(
    Object.entries(passed ?? {}).filter(([, value]) => value !== undefined),
  )
  const logger = given.logger === undefined ? CONSOLE_LOGGER : checkLogger(given.logger)
  warnUnknown(given, logger)
  const settled = EXPRESS_RATE_LIMIT_OPTIONS.resolve(knownOf(given), 'express-rate-limit')
  const stores = storeOf(given.store, settled.passOnStoreError, logger)
  const options = peerOptions(given, settled, logger, stores.sluice)
  const standard = options.standardHeaders
  return {
    options,
    core: coreOptions(options, given, stores.sluice),
    peerStore: stores.peer,
    headers: {
      legacy: options.legacyHeaders,
      draft: standard === false || standard === true ? undefined : standard,
      windowMs: options.windowMs,
    },
    property: options.requestPropertyName,
    logger,
    handler: options.handler,
    identifier: options.identifier,
  }
}

/** The limit the request was counted against (the default quota name shows it). */
function limitFromInfo(req: Request, property: string): number {
  return (req as unknown as Record<string, { limit: number } | undefined>)[property]?.limit ?? 0
}
