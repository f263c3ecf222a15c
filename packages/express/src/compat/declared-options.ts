/**
 * Owns express-rate-limit's options, declared once: each option's doc line, default and own
 * check. The known names (an unknown one is warned about, as express-rate-limit does), the
 * defaults and the checks options.ts reads all derive from this table; the numbers it takes
 * leniently (a bad one falls back to its default, warned) are read there, as are the
 * defaults that depend on other options.
 */
import { checkBoolean, checkFunction, declareOptions, invalidOption } from '@sluice/core/adapter'
import { checkSfStringText } from '@sluice/http'
import type { Logger, Options } from './types'

/** express-rate-limit's console logger: `error(error, message)` as `console.error(message, error)`. */
export const CONSOLE_LOGGER: Logger = {
  error: (error, message) =>
    message === undefined ? console.error(error) : console.error(message, error),
  warn: (error, message) =>
    message === undefined ? console.warn(error) : console.warn(message, error),
}

export function checkLogger(logger: unknown): Logger {
  const candidate = logger as Partial<Logger> | null
  if (
    typeof candidate !== 'object' ||
    candidate === null ||
    typeof candidate.error !== 'function' ||
    typeof candidate.warn !== 'function'
  ) {
    invalidOption('logger', logger, 'an object with error(error, message) and warn(...) methods')
  }
  return candidate as Logger
}

function checkPropertyName(property: unknown, name: string): void {
  if (typeof property !== 'string' || property === '') {
    invalidOption(name, property, 'a non-empty string')
  }
}

function checkIdentifier(identifier: unknown, name: string): void {
  if (typeof identifier === 'string') checkSfStringText(identifier, name)
  else if (typeof identifier !== 'function')
    invalidOption(name, identifier, 'a string or a function')
}

/** express-rate-limit 8's options, each with its default there. */
export const EXPRESS_RATE_LIMIT_OPTIONS = declareOptions<Options>('express-rate-limit', {
  windowMs: { doc: "window length in ms, from each key's first hit", default: 60_000 },
  limit: { doc: 'hits allowed per window; 0 refuses every request', default: 5 },
  max: { doc: 'older name of `limit`' },
  message: {
    doc: 'the body of a rejection',
    default: 'Too many requests, please try again later.',
    orNull: true,
  },
  statusCode: { doc: 'status of a rejection', default: 429, orNull: true },
  legacyHeaders: { doc: '`X-RateLimit-Limit`, `-Remaining`, `-Reset`', default: true },
  headers: { doc: 'pre-v6 name of `legacyHeaders`' },
  standardHeaders: { doc: 'IETF `RateLimit` fields; true means draft-6', default: false },
  identifier: {
    doc: "the quota's name in draft-8 headers; default: '<limit>-in-<window>'",
    check: checkIdentifier,
  },
  requestPropertyName: {
    doc: "where the request's RateLimitInfo goes on `req`",
    default: 'rateLimit',
    check: checkPropertyName,
  },
  skipFailedRequests: {
    doc: 'take back the hit of a failed response',
    default: false,
    check: checkBoolean,
    orNull: true,
  },
  skipSuccessfulRequests: {
    doc: 'take back the hit of a successful response',
    default: false,
    check: checkBoolean,
    orNull: true,
  },
  keyGenerator: {
    doc: "the request's key; default: the client IP, IPv6 grouped by `ipv6Subnet`",
    check: checkFunction,
  },
  ipv6Subnet: {
    doc: 'prefix length IPv6 clients are grouped by, a function or false',
    default: 56,
  },
  handler: {
    doc: 'answers rejected requests; default: sends `statusCode` and `message`',
    check: checkFunction,
  },
  skip: { doc: 'requests it returns true for are not counted', check: checkFunction },
  requestWasSuccessful: {
    doc: 'decides success for the two skip options; default: status < 400',
    check: checkFunction,
  },
  store: { doc: "where hits are counted; default: Sluice's MemoryStore" },
  validate: {
    doc: "express-rate-limit's start-up checks; accepted and ignored",
    default: true,
    orNull: true,
  },
  passOnStoreError: {
    doc: 'let requests through (and log the error) when the store fails',
    default: false,
    orNull: true,
  },
  logger: { doc: 'where errors and warnings go', default: CONSOLE_LOGGER, check: checkLogger },
})
