/**
 * Owns the rate-limit headers as express-rate-limit writes them: legacy `X-RateLimit-*`, the
 * IETF drafts 6, 7 and 8 (draft-8 appended, so stacked limiters list one quota each), and
 * `Retry-After` on rejections.
 */
import { createHash } from 'node:crypto'
import { isSfStringText, sfString } from '@sluice/http'
import type { Request, Response } from 'express'
import type { DraftHeadersVersion, Logger, Options, RateLimitInfo } from './types'

/** What the headers need besides the request's info; fixed per middleware. */
export interface HeaderSettings {
  readonly legacy: boolean
  readonly draft: DraftHeadersVersion | undefined
  readonly windowMs: number
}

/** Headers go out only on a response that can still take them (express-rate-limit checks too). */
export function canWriteHeaders(res: Response): boolean {
  return typeof res.setHeader === 'function' && !res.headersSent
}

/** Whole seconds until the window resets, never negative. */
function secondsLeft(info: RateLimitInfo, now: number, windowMs: number): number {
  if (info.resetTime === undefined) return Math.ceil(windowMs / 1000)
  return Math.max(0, Math.ceil((info.resetTime.getTime() - now) / 1000))
}

/** draft-8's partition key: the key's SHA-256, its first 12 hex digits in base64, not the key. */
function partitionKey(key: string): string {
  const hex = createHash('sha256').update(key).digest('hex')
  return Buffer.from(hex.slice(0, 12)).toString('base64')
}

/** Writes the headers of a counted request; `name` is the draft-8 quota name (written as an sf-string). */
export function writeHeaders(
  res: Response,
  info: RateLimitInfo,
  now: number,
  settings: HeaderSettings,
  name: string,
): void {
  const window = Math.ceil(settings.windowMs / 1000)
  const reset = secondsLeft(info, now, settings.windowMs)
  if (settings.legacy) {
    res.setHeader('X-RateLimit-Limit', String(info.limit))
    res.setHeader('X-RateLimit-Remaining', String(info.remaining))
    if (info.resetTime !== undefined) {
      res.setHeader('X-RateLimit-Reset', String(Math.ceil(info.resetTime.getTime() / 1000)))
    }
  }
  switch (settings.draft) {
    case 'draft-6':
      res.setHeader('RateLimit-Policy', `${info.limit};w=${window}`)
      res.setHeader('RateLimit-Limit', String(info.limit))
      res.setHeader('RateLimit-Remaining', String(info.remaining))
      res.setHeader('RateLimit-Reset', String(reset))
      break
    case 'draft-7':
      res.setHeader('RateLimit-Policy', `${info.limit};w=${window}`)
      res.setHeader('RateLimit', `limit=${info.limit}, remaining=${info.remaining}, reset=${reset}`)
      break
    case 'draft-8':
      res.append('RateLimit', `${sfString(name)}; r=${info.remaining}; t=${reset}`)
      res.append(
        'RateLimit-Policy',
        `${sfString(name)}; q=${info.limit}; w=${window}; pk=:${partitionKey(info.key)}:`,
      )
      break
    default:
  }
}

/** `Retry-After` of a rejection, sent only when some rate-limit headers are on. */
export function writeRetryAfter(
  res: Response,
  info: RateLimitInfo,
  now: number,
  settings: HeaderSettings,
): void {
  if (!settings.legacy && settings.draft === undefined) return
  res.setHeader('Retry-After', String(secondsLeft(info, now, settings.windowMs)))
}

/** Units of a quota name: each is used while the amount stays below `next` of it. */
const NAME_UNITS: readonly { unit: string; next: number; plural: boolean }[] = [
  { unit: 'sec', next: 60, plural: false },
  { unit: 'min', next: 60, plural: false },
  { unit: 'hr', next: 24, plural: true },
  { unit: 'day', next: Infinity, plural: true },
]

/** The default draft-8 quota name, e.g. `5-in-1min`, `6-in-1hr`, `8-in-2days`. */
export function quotaName(limit: number, windowMs: number): string {
  let amount = windowMs / 1000
  for (const { unit, next, plural } of NAME_UNITS) {
    if (amount < next) return `${limit}-in-${amount}${unit}${plural && amount > 1 ? 's' : ''}`
    amount /= next
  }
  return `${limit}-in-${amount}days`
}

/**
 * The draft-8 quota name of a request: `identifier` (a string checked at creation, or a function
 * asked per request). A function's answer that an sf-string cannot hold (not a string, or with
 * controls or non-ASCII) is not written: the default name is, after one warning per middleware.
 */
export function quotaNamer(settings: {
  readonly identifier: Options['identifier'] | undefined
  readonly logger: Logger
  readonly headers: HeaderSettings
}): (req: Request, res: Response, info: RateLimitInfo) => Promise<string> {
  const { identifier, logger, headers } = settings
  let warned = false
  return async function quotaNameOf(req, res, info) {
    if (typeof identifier !== 'function') return identifier ?? ''
    const name: unknown = await identifier(req, res)
    if (typeof name === 'string' && isSfStringText(name)) return name
    if (!warned) {
      warned = true
      logger.warn(
        new TypeError(`\`identifier\` returned ${JSON.stringify(name) ?? String(name)}`),
        '[sluice] express-rate-limit compatibility: `identifier` must return printable ASCII (a RateLimit-Policy string holds nothing else); the default quota name is sent instead',
      )
    }
    return quotaName(info.limit, headers.windowMs)
  }
}
