/**
 * Owns the token-bucket algorithm (and the bucket shape leaky-bucket shares with it).
 */
import type { Algorithm, PolicyNumbers, StateVector } from './types'
import { ceilDiv } from './exact'
import { decideMeter, drained, penalized, wideMeter } from './meter'

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

/*
 * Wide policies (isWide): [whole units missing, remainder x windowMs, lastRefill], the backlog
 * split at the window instead of one number, hence three slots where the narrow bucket has two.
 */

/** The backlog at `now` (drained since the last refill; held while the clock is behind it). */
function bucketBacklog(s: StateVector, b: number, now: number, policy: PolicyNumbers): bigint {
  const level = BigInt(s[b]) * BigInt(policy.windowMs) + BigInt(s[b + 1])
  if (now <= s[b + 2]) return level
  const left = level - BigInt(Math.floor(now - s[b + 2])) * BigInt(policy.limit)
  return left > 0n ? left : 0n
}

function setBucket(
  s: StateVector,
  b: number,
  now: number,
  policy: PolicyNumbers,
  level: bigint,
): void {
  const window = BigInt(policy.windowMs)
  const whole = level > 0n ? level / window : 0n
  s[b] = Number(whole)
  s[b + 1] = level > 0n ? Number(level - whole * window) : 0
  s[b + 2] = Math.max(now, s[b + 2])
}

function bucketExpiry(s: StateVector, b: number, policy: PolicyNumbers): number {
  const level = BigInt(s[b]) * BigInt(policy.windowMs) + BigInt(s[b + 1])
  return level > 0n ? s[b + 2] + Number(ceilDiv(level, BigInt(policy.limit))) : 0
}

/** A bucket's transitions for wide policies; with `shaping`, leaky-bucket's. */
export const bucketWide = (shaping: boolean): Algorithm =>
  wideMeter(3, bucketBacklog, setBucket, shaping, bucketExpiry)

export const tokenBucketWide = bucketWide(false)

/** The wide bucket whose backlog at time 0 is `backlog`: how RedisStore reads a wide reply. */
export function bucketWideAtBacklog(s: StateVector, backlog: bigint, policy: PolicyNumbers): void {
  s[2] = 0
  setBucket(s, 0, 0, policy, backlog)
}
