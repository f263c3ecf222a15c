/**
 * Owns counting the peer's way on Sluice's core limiter: a fixed window per key from its first
 * request (`anchor: 'first-request'`), answered as @fastify/rate-limit's stores answer
 * (`current`, `ttl`). The peer counts requests over the limit too (its ban and backoff read that
 * count); Sluice counts only admitted requests, so the requests over the limit since the window
 * filled are counted here, per process. `continueExceeding` and `exponentialBackoff` become a
 * block of the key (the store keeps it) for the window, or for the doubled wait.
 */
import { createLimiter, systemClock, type Limiter, type Store } from '@sluice/core'
import { type Logger } from '@sluice/http'
import { MAX_SAFE_PRODUCT } from '@sluice/core/adapter'
import { isPeerStore, NO_READ_MESSAGE } from './peer-store'

export interface Count {
  current: number
  ttl: number
}

export interface Counter {
  incr(key: string, timeWindow: number, max: number): Promise<Count>
  read(key: string, timeWindow: number, max: number): Promise<Count>
}

export interface CounterOptions {
  store: Store
  prefix: string
  continueExceeding: boolean
  exponentialBackoff: boolean
  /** Keys whose requests over the limit are remembered at once; the oldest go first. */
  maxKeys: number
  /** Where store outages are reported (the app's Fastify logger). */
  logger: Logger
}

/** Distinct (max, window) pairs whose limiters are kept for reuse. */
const MAX_LIMITERS = 1000

interface Overage {
  count: number
  until: number
}

export function createCounter(options: CounterOptions): Counter {
  const { store, prefix, maxKeys, logger } = options
  // A peer store times its own windows (its continueExceeding and backoff are its own).
  const peer = isPeerStore(store)
  const continueExceeding = options.continueExceeding && !peer
  const exponentialBackoff = options.exponentialBackoff && !peer
  const limiters = new Map<string, Limiter>()
  const overages = new Map<string, Overage>()

  /** One limiter per (max, window): `max` and `timeWindow` may be functions of the request. */
  function limiterFor(max: number, timeWindow: number): Limiter {
    const id = `${max}/${timeWindow}`
    let limiter = limiters.get(id)
    if (limiter === undefined) {
      // max 0 blocks every request: one is counted, and it is already over.
      const limit = Math.max(1, max)
      limiter = createLimiter({
        algorithm: 'fixed-window',
        anchor: 'first-request',
        limit,
        // Sluice keeps every time exact in every store: a window past 2^50 ms is cut to it.
        window: Math.min(Math.max(1, timeWindow), MAX_SAFE_PRODUCT),
        store,
        prefix,
        clock: systemClock,
        breaker: false,
        logger,
      })
      limiters.set(id, limiter)
      // A limiter holds no state (the store does): past this many pairs, drop the oldest.
      if (limiters.size > MAX_LIMITERS) limiters.delete(limiters.keys().next().value!)
    }
    return limiter
  }

  function overageOf(key: string, now: number): number {
    const overage = overages.get(key)
    return overage !== undefined && overage.until > now ? overage.count : 0
  }

  function remember(key: string, count: number, until: number): void {
    overages.delete(key)
    overages.set(key, { count, until })
    if (overages.size > maxKeys) overages.delete(overages.keys().next().value!)
  }

  /** How long the key now waits after its `over`-th request over the limit. */
  async function penalty(
    limiter: Limiter,
    key: string,
    over: number,
    timeWindow: number,
    ttl: number,
  ) {
    if (!continueExceeding && !exponentialBackoff) return ttl
    const wait = continueExceeding
      ? timeWindow
      : Math.min(timeWindow * 2 ** (over - 1), Number.MAX_SAFE_INTEGER)
    await limiter.block(key, wait)
    return wait
  }

  return {
    async incr(key, timeWindow, max) {
      const limiter = limiterFor(max, timeWindow)
      const decision = await limiter.consume(key)
      const now = systemClock()
      const counted = decision.limit - decision.remaining
      if (decision.allowed) {
        overages.delete(key)
        return { current: counted, ttl: decision.resetMs }
      }
      const over = overageOf(key, now) + 1
      const ttl = await penalty(limiter, key, over, timeWindow, decision.retryAfterMs)
      remember(key, over, now + ttl)
      return { current: decision.limit + over, ttl }
    },
    async read(key, timeWindow, max) {
      if (isPeerStore(store) && typeof store.fastifyStore.read !== 'function')
        throw new Error(NO_READ_MESSAGE)
      const decision = await limiterFor(max, timeWindow).peek(key)
      const now = systemClock()
      const current = decision.limit - decision.remaining + overageOf(key, now)
      return current === 0 ? { current: 0, ttl: 0 } : { current, ttl: decision.resetMs }
    },
  }
}
