/**
 * Owns the rate-limit headers as express-rate-limit writes them: legacy `X-RateLimit-*`, the
 * IETF drafts 6, 7 and 8 (draft-8 appended, so stacked limiters list one quota each), and
 * `Retry-After` on rejections.
 */
import { createHash } from 'node:crypto'
import type { Response } from 'express'
import type { DraftHeadersVersion, RateLimitInfo } from './types'

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

/** Writes the headers of a counted request; `name` is the draft-8 quota name. */
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
      res.append('RateLimit', `"${name}"; r=${info.remaining}; t=${reset}`)
      res.append(
        'RateLimit-Policy',
        `"${name}"; q=${info.limit}; w=${window}; pk=:${partitionKey(info.key)}:`,
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
