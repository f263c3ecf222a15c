/**
 * Owns what a refused request is answered with: the verdicts (limited 429, banned and denied
 * 403, aborted), their JSON bodies and messages, and the per-key ban counter.
 */
import { type Clock, type Decision, isPromise } from '@sluice/core/web'
import type { HeaderList } from './headers'
import { ERROR_STATUS_TEXT } from './status-text'
import type { Awaitable, HttpLimitOptions, RateLimitMessage, RejectVerdict } from './types'

/** Keys the ban counter remembers (per process). */
const MAX_BAN_KEYS = 10_000

export interface RejectionSettings<Req> {
  readonly statusCode: number
  readonly message: HttpLimitOptions<Req>['message']
  /** Rejections per key and window before they turn into 403 bans; undefined for no bans. */
  readonly ban: number | undefined
  /** The adapter answers rate-limit rejections itself: no body is built. */
  readonly customRejection: boolean
  readonly clock: Clock
}

/** The verdicts of refused requests, with the options read once. */
export interface Rejections<Req> {
  /** A rate-limited request: banned (403) past `ban`, else limited, with its body. */
  refuse(
    req: Req,
    key: string,
    decision: Decision,
    headers: HeaderList,
    seconds: number,
  ): Awaitable<RejectVerdict>
  /** A request refused with the default body (a shaping hold that would be too long). */
  limited(decision: Decision, headers: HeaderList, seconds: number, key: string): RejectVerdict
  /** A deny-listed request. */
  denied(key: string): RejectVerdict
  /** A request whose client went away while it was held. */
  aborted(key: string): RejectVerdict
}

function neverMessage(decision: Decision): string {
  const policy = decision.policies.find((p) => !p.allowed && !Number.isFinite(p.retryAfterMs))
  const capacity = (policy ?? decision).policy.burst
  return `This request costs more than the limit of ${capacity} allows at once, so it can never pass; retrying will not help.`
}

function defaultMessage(seconds: number): string {
  return `Too many requests, please try again in ${seconds} second${seconds === 1 ? '' : 's'}.`
}

export function createRejections<Req>(settings: RejectionSettings<Req>): Rejections<Req> {
  const { statusCode, message, ban, customRejection, clock } = settings
  const limitedError = ERROR_STATUS_TEXT[statusCode] ?? 'Too Many Requests'
  const bans = ban === undefined ? undefined : new Map<string, { count: number; until: number }>()

  /** Counts a rejection towards the ban; true once the key is past `ban` in this window. */
  function banned(key: string, decision: Decision): boolean {
    const now = clock()
    let entry = bans!.get(key)
    if (entry === undefined || entry.until <= now) {
      if (bans!.size >= MAX_BAN_KEYS) bans!.delete(bans!.keys().next().value!)
      entry = { count: 0, until: now + decision.policy.windowMs }
      bans!.set(key, entry)
    }
    entry.count++
    return entry.count > ban!
  }

  function bodyOf(
    value: RateLimitMessage | undefined,
    seconds: number,
    decision: Decision,
  ): unknown {
    if (value === undefined || typeof value === 'string') {
      // seconds 0 on a rejection: the cost is over the capacity, no wait will make it pass.
      if (seconds === 0) {
        return { error: limitedError, message: value ?? neverMessage(decision), retryAfter: null }
      }
      return { error: limitedError, message: value ?? defaultMessage(seconds), retryAfter: seconds }
    }
    return value
  }

  /** The body of a rate-limit rejection; a promise only when `message` is a function. */
  function rejectionBody(req: Req, decision: Decision, seconds: number): Awaitable<unknown> {
    if (typeof message === 'function') {
      return (async () => bodyOf(await message(req, decision), seconds, decision))()
    }
    return bodyOf(message, seconds, decision)
  }

  function limitedVerdict(
    decision: Decision,
    headers: HeaderList,
    body: unknown,
    seconds: number,
    key: string,
  ): RejectVerdict {
    return {
      action: 'reject',
      reason: 'limited',
      status: statusCode,
      decision,
      headers,
      body,
      retryAfterSeconds: seconds,
      key,
    }
  }

  return {
    refuse(req, key, decision, headers, seconds) {
      if (bans !== undefined && banned(key, decision)) {
        return {
          action: 'reject',
          reason: 'banned',
          status: 403,
          decision,
          headers,
          body: {
            error: 'Forbidden',
            message: `Banned for too many requests; try again in ${seconds} seconds.`,
            retryAfter: seconds,
          },
          retryAfterSeconds: seconds,
          key,
        }
      }
      const body = customRejection ? undefined : rejectionBody(req, decision, seconds)
      if (isPromise(body)) {
        return body.then((value) => limitedVerdict(decision, headers, value, seconds, key))
      }
      return limitedVerdict(decision, headers, body, seconds, key)
    },
    limited(decision, headers, seconds, key) {
      const body = { error: limitedError, message: defaultMessage(seconds), retryAfter: seconds }
      return limitedVerdict(decision, headers, body, seconds, key)
    },
    denied(key) {
      return {
        action: 'reject',
        reason: 'denied',
        status: 403,
        decision: undefined,
        headers: [],
        body: { error: 'Forbidden', message: 'Access denied.' },
        retryAfterSeconds: 0,
        key,
      }
    },
    aborted(key) {
      return {
        action: 'reject',
        reason: 'aborted',
        status: statusCode,
        decision: undefined,
        headers: [],
        body: {
          error: limitedError,
          message: 'The client went away while its request was queued.',
        },
        retryAfterSeconds: 0,
        key,
      }
    },
  }
}
