/**
 * Owns checking the module's options once, at start-up: a bad value throws a ConfigError that
 * names it; a `ttl` that looks like seconds is warned about once.
 */
import type { Logger } from '@sluice/http'
import { checkPositiveInteger, invalidOption } from '@sluice/core/adapter'
import { DEFAULT_THROTTLER } from './constants'
import type {
  ThrottlerModuleObjectOptions,
  ThrottlerModuleOptions,
  ThrottlerOptions,
} from './options'

/** The object form of either shape. */
export function objectForm(options: ThrottlerModuleOptions): ThrottlerModuleObjectOptions {
  return Array.isArray(options) ? { throttlers: options } : options
}

/** A whole number of units above zero (`limit`, `ttl`, `blockDuration` of a fixed value). */
export function checkCount(value: unknown, option: string, what: string): number {
  return checkPositiveInteger(value, option, what)
}

const LIMIT = 'a positive whole number of requests, or a function of the context'
const MS =
  'a positive whole number of milliseconds (e.g. seconds(60)), or a function of the context'

/** The warning of a `ttl` in seconds, once per process. */
let warnedSeconds = false

/** Forgets the one-time warnings (for tests). */
export function resetThrottlerWarnings(): void {
  warnedSeconds = false
}

/** Checks a `limit`, `ttl` or `blockDuration` (a function is checked per request). */
function checkResolvable(value: unknown, option: string, what: string): void {
  if (typeof value !== 'function') checkCount(value, option, what)
}

/** @nestjs/throttler 5 moved `ttl` from seconds to ms: a small ttl with a limit above 1 is likely seconds. */
export function warnIfSeconds(ttl: number, limit: number, option: string, logger: Logger): void {
  if (warnedSeconds || ttl >= 1000 || limit <= 1) return
  warnedSeconds = true
  logger.warn(
    `[sluice] \`${option}\` is ${ttl}, in milliseconds (since @nestjs/throttler 5): ${limit} requests per ${ttl} ms. If you meant seconds, write seconds(${ttl}).`,
  )
}

function checkThrottler(throttler: ThrottlerOptions, at: string, logger: Logger): void {
  if (typeof throttler !== 'object' || throttler === null) {
    invalidOption(at, throttler, 'a throttler object ({ limit, ttl })')
  }
  const { name, limit, ttl, blockDuration } = throttler
  if (name !== undefined && (typeof name !== 'string' || name === '')) {
    invalidOption(`${at}.name`, name, 'a non-empty string')
  }
  checkResolvable(limit, `${at}.limit`, LIMIT)
  checkResolvable(ttl, `${at}.ttl`, MS)
  if (blockDuration !== undefined) checkResolvable(blockDuration, `${at}.blockDuration`, MS)
  if (typeof ttl === 'number' && typeof limit === 'number') {
    warnIfSeconds(ttl, limit, `${at}.ttl`, logger)
  }
  for (const option of ['skipIf', 'getTracker', 'generateKey'] as const) {
    const value = throttler[option]
    if (value !== undefined && typeof value !== 'function') {
      invalidOption(`${at}.${option}`, value, 'a function')
    }
  }
}

/** Checks every throttler and the common options; returns the throttlers' names. */
export function checkModuleOptions(options: ThrottlerModuleOptions, logger: Logger): string[] {
  if (typeof options !== 'object' || options === null) {
    invalidOption('ThrottlerModule options', options, 'an array of throttlers or { throttlers }')
  }
  const { throttlers } = objectForm(options)
  if (!Array.isArray(throttlers)) {
    invalidOption('throttlers', throttlers, 'an array of throttlers ({ name?, limit, ttl })')
  }
  const names: string[] = []
  throttlers.forEach((throttler, i) => {
    checkThrottler(throttler, `throttlers[${i}]`, logger)
    const name = throttler.name ?? DEFAULT_THROTTLER
    if (names.includes(name))
      invalidOption(`throttlers[${i}].name`, name, 'a name no other throttler has')
    names.push(name)
  })
  return names
}
