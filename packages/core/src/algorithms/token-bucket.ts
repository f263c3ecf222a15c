/**
 * Owns the token-bucket algorithm (and the bucket shape leaky-bucket shares with it).
 */
import type { Algorithm, StateVector } from './types'
import { decideMeter, drained, penalized } from './meter'

/**
 * A bucket of `burst` tokens refilled lazily at `limit` per window; a request takes `cost`.
 * Stored as the tokens missing from a full bucket: State: [missing x windowMs, lastRefill].
 * An empty state (all zeros) is a full bucket.
 */
export function bucketAlgorithm(shaping: boolean): Algorithm {
  return {
    slots: () => 2,
    decide(s, b, now, policy, cost, out, maxDelayMs) {
      decideMeter(drained(s[b], s[b + 1], now, policy), policy, cost, out, shaping, maxDelayMs)
    },
    consume(s, b, now, policy, cost, out, maxDelayMs) {
      const level = drained(s[b], s[b + 1], now, policy)
      decideMeter(level, policy, cost, out, shaping, maxDelayMs)
      if (out.allowed && cost !== 0) {
        s[b] = level + cost * policy.windowMs
        s[b + 1] = Math.max(now, s[b + 1])
      }
    },
    apply(s, b, now, policy, cost) {
      s[b] = drained(s[b], s[b + 1], now, policy) + cost * policy.windowMs
      s[b + 1] = Math.max(now, s[b + 1])
    },
    refund(s, b, now, policy, cost) {
      s[b] = Math.max(0, drained(s[b], s[b + 1], now, policy) - cost * policy.windowMs)
      s[b + 1] = Math.max(now, s[b + 1])
    },
    penalize(s, b, now, policy, cost) {
      s[b] = penalized(drained(s[b], s[b + 1], now, policy), policy, cost)
      s[b + 1] = Math.max(now, s[b + 1])
    },
    expiresAt: (s, b, policy) => (s[b] > 0 ? s[b + 1] + Math.ceil(s[b] / policy.limit) : 0),
  }
}

/** The bucket whose backlog at time 0 is `backlog`: how RedisStore reads its scripts' reply. */
export function bucketAtBacklog(s: StateVector, backlog: number): void {
  s[0] = backlog
  s[1] = 0
}

export const tokenBucket = bucketAlgorithm(false)
