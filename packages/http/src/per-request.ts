/**
 * Owns the options read per request: the limit and window functions, each request's tier
 * resolved (and its limiter cached) when first seen, and the counter of rejections in a row
 * that `backoff` and `ban` read.
 */
import {
  checkOneOf,
  checkPositiveInteger,
  createLimiter,
  invalidOption,
  OldestFirst,
  type Limiter,
  type LimiterOptions,
  parseDuration,
} from '@sluice/core/web'
import { checkBoolean } from './checks'
import { RefusalCounter } from './refusals'
import type { HttpLimitOptions } from './types'

/** Distinct per-tier limits kept; beyond it the oldest is dropped (limiters are stateless views of the store). */
const MAX_TIERS = 256

const BACKOFF_MODES = ['restart', 'double'] as const

/** A per-request limit: its limiter, and whether it refuses every request (`limit` 0). */
export interface Tier {
  /** The limiter of the request's limit and window (limit 1 for a limit of 0: its window). */
  readonly limiter: Limiter
  readonly refusesAll: boolean
}

/** Per-tier limits (`limit` or `window` a function): the (cached) tier of a request. */
export interface Tiers<Req> {
  readonly tierOf: (req: Req, key: string) => Promise<Tier>
}

/** A limit function's 0 refuses the request; anything else is checked as a limit is. */
function tierLimit(limit: unknown): number {
  return limit === 0 ? 0 : checkPositiveInteger(limit, 'limit')
}

/**
 * Per-tier limiters: the limit and window of each request, from the options' functions, and
 * their limiter, created on first use and kept for the MAX_TIERS most recent pairs.
 */
export function tierLimiters<Req>(
  base: LimiterOptions,
  limit: HttpLimitOptions<Req>['limit'],
  window: HttpLimitOptions<Req>['window'],
): Tiers<Req> {
  const tiers = new Map<string, Tier>()
  const oldest = new OldestFirst(tiers)
  const fixedWindow = typeof window === 'function' ? 0 : parseDuration(window ?? '1m', 'window')
  const fixedLimit = typeof limit === 'function' ? 0 : (limit ?? 100)
  function tierFor(limitOfReq: number, windowMs: number): Tier {
    const id = `${limitOfReq}/${windowMs}`
    let tier = tiers.get(id)
    if (tier === undefined) {
      const refusesAll = limitOfReq === 0
      const limiter = createLimiter({
        ...base,
        limit: refusesAll ? 1 : limitOfReq,
        window: windowMs,
      })
      tier = { limiter, refusesAll }
      if (tiers.size >= MAX_TIERS) oldest.evict()
      tiers.set(id, tier)
    }
    return tier
  }
  return {
    async tierOf(req, key) {
      const limitOfReq = typeof limit === 'function' ? tierLimit(await limit(req, key)) : fixedLimit
      const windowMs =
        typeof window === 'function' ? parseDuration(await window(req, key), 'window') : fixedWindow
      return tierFor(limitOfReq, windowMs)
    },
  }
}

/** The counter of rejections in a row, when `countRefusals`, `ban` or `backoff` reads one. */
export function refusalsOf<Req>(
  options: HttpLimitOptions<Req>,
  byRules: boolean,
): RefusalCounter | undefined {
  const { backoff, ban, countRefusals } = options
  if (backoff !== undefined) checkOneOf(backoff, 'backoff', BACKOFF_MODES)
  if (backoff !== undefined && byRules) {
    invalidOption('backoff', backoff, 'unset when `rules` is given')
  }
  const readers = ban !== undefined || backoff !== undefined
  if (checkBoolean(countRefusals, 'countRefusals') || (countRefusals === undefined && readers)) {
    return new RefusalCounter()
  }
  if (readers) {
    invalidOption(
      'countRefusals',
      countRefusals,
      'true or unset with `ban` or `backoff` (they read the count)',
    )
  }
  return undefined
}
