// What a user's `key` function returned, turned into a key, or recognised as a bad key.
import { checkOneOf, describeValue, SluiceError } from '@sluice/core/web'
import type { RequestLike, Logger } from './keys'

/** What a `key` function may return: a key (numbers and bigints are stringified), or `false`/`undefined`. */
export type KeyResult = string | number | bigint | false | undefined

/** What to do with a bad key: fall back to the client IP (logged once), or throw. */
export type BadKeyMode = 'ip' | 'throw'

const BAD_KEY_MODES: readonly BadKeyMode[] = ['ip', 'throw']

export function checkBadKeyMode(mode: unknown): BadKeyMode {
  if (mode === undefined) return 'ip'
  return checkOneOf(mode, 'onBadKey', BAD_KEY_MODES)
}

/** The key as a string, or undefined when the value cannot be one (null, '', NaN, an object...). */
export function keyFromResult(value: unknown): string | undefined {
  if (typeof value === 'string') return value === '' ? undefined : value
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : undefined
  if (typeof value === 'bigint') return String(value)
  return undefined
}

/**
 * Handles a `key` result that is no key: with 'ip' it returns undefined (the caller keys by
 * the client IP) after one warning per limiter, naming the route; with 'throw' it throws, and
 * the framework's error handling answers. Never one shared bucket for every such request.
 */
export function createBadKeyHandler(
  mode: BadKeyMode,
  logger: Logger,
): (value: unknown, req: RequestLike & { method?: string }) => undefined {
  let warned = false
  return function badKey(value, req) {
    // A Fetch Request's url is absolute: the route is its path, as Node's req.url gives it.
    const path = (req.url ?? '/').replace(/^[a-z][a-z0-9+.-]*:\/\/[^/]*/i, '')
    const route = `${req.method ?? 'GET'} ${path.split('?')[0] || '/'}`
    if (mode === 'throw') {
      throw new SluiceError(
        'ERR_SLUICE_ARGUMENT',
        `\`key\` returned ${describeValue(value)} for ${route}; a key must be a non-empty string, a finite number or a bigint (or false/undefined)`,
      )
    }
    if (!warned) {
      warned = true
      logger.warn(
        `[sluice] \`key\` returned ${describeValue(value)} for ${route}: not a key, so such requests are limited by client IP instead (onBadKey: 'ip'). Return a non-empty string, a number, false (no limit) or undefined (the IP).`,
      )
    }
    return undefined
  }
}
