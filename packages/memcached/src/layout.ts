/**
 * Owns how state is laid out in memcached items: counter and bucket keys, block keys, TTLs.
 */
import { createHash } from 'node:crypto'
import { type Algorithm, type Policy } from '@sluice/core'
import { algorithmOf, ROWS } from '@sluice/core/adapter'

/*
 * Where each policy's state lives. Counter algorithms keep one memcached counter per time
 * bucket (`<prefix>:<policy id>|<key>:<bucket>`), as the seeds' sliding counters do; meters keep
 * their state vector as one text item (`<prefix>:<policy id>|<key>`), rewritten by CAS.
 *
 * Names are read back one way only, whatever the client key holds: a policy id never holds
 * `|`, `#` or `@`, so the first of them after the prefix ends the id, and says what follows: `|`
 * the client key as it is, `#` the SHA-256 of a key too long for memcached, `@` the SHA-256 of
 * a key and a rules state key. A client key cannot name another key's hash, nor another
 * limit's state (`fw:10:1000` with key `5:x` is not `fw:10:1000:5` with key `x`). A counter's
 * bucket index, digits only, follows the last `:`.
 */

/** memcached refuses longer keys. */
const MAX_KEY_BYTES = 250
/** Room left for `:<bucket index>` (a bucket index has at most 16 digits). */
const BUCKET_SUFFIX_BYTES = 17

/** One policy of one request: its keys and how to read them. */
export interface Part {
  readonly policy: Policy
  readonly algorithm: Algorithm
  /** fixed-window (clock-aligned) and sliding-window: per-bucket counters (incr/decr); the rest one item by CAS. */
  readonly counter: boolean
  /**
   * A counter over a ring of sub-window buckets (the registry's state 'ring': sliding-window);
   * false: one bucket per window (fixed-window), or not a counter.
   */
  readonly ring: boolean
  /** Bucket length (ms) of a counter; 0 for meters. */
  readonly size: number
  /** Buckets a counter reads besides the current one (precision of sliding-window, 0 for fixed). */
  readonly older: number
  /** The meter's item, or the stem of a counter's bucket keys. */
  readonly base: string
}

export function isCounter(policy: Policy): boolean {
  // A key's own windows (anchor 'first-request') have no shared bucket to name an item after:
  // they keep [windowStart, count] in one item rewritten by CAS, as the meters do.
  if (policy.anchor === 'first-request') return false
  return ROWS[policy.algorithm].family === 'counter'
}

/** The key's part of an item name, hashed when the name would pass memcached's 250 bytes. */
function stem(prefix: string, policy: Policy, key: string): string {
  const plain = `${prefix}:${policy.id}|${key}`
  if (Buffer.byteLength(plain) + BUCKET_SUFFIX_BYTES <= MAX_KEY_BYTES) return plain
  return `${prefix}:${policy.id}#${sha256(key)}`
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('base64url')
}

/**
 * `stateKey`: the per-policy state key within `key` (StoreRequest.keys); the pair is hashed
 * (`@<sha256>`), the key's length first, so no choice of key and state key can name another
 * pair's items.
 */
export function partOf(prefix: string, policy: Policy, key: string, stateKey?: string): Part {
  const counter = isCounter(policy)
  const sliding = ROWS[policy.algorithm].state === 'ring'
  return {
    policy,
    algorithm: algorithmOf(policy),
    counter,
    ring: counter && sliding,
    size: counter ? (sliding ? policy.windowMs / policy.precision : policy.windowMs) : 0,
    older: sliding ? policy.precision : 0,
    base:
      stateKey === undefined
        ? stem(prefix, policy, key)
        : `${prefix}:${policy.id}@${sha256(`${key.length}:${key}${stateKey}`)}`,
  }
}

/**
 * The key's block (`store.block`): `<prefix>:b|<key>` (`<prefix>:b#<sha256>` when too long), its
 * end time (ms) as decimal text.
 */
export function blockKey(prefix: string, key: string): string {
  const plain = `${prefix}:b|${key}`
  if (Buffer.byteLength(plain) <= MAX_KEY_BYTES) return plain
  return `${prefix}:b#${sha256(key)}`
}

/** A counter's count per bucket, as read into `state` (the inverse of counterState). */
export function counterCounts(
  part: Part,
  state: readonly number[],
  now: number,
): Map<number, number> {
  const counts = new Map<number, number>()
  const current = Math.floor(now / part.size)
  if (!part.ring) {
    counts.set(current, state[0] === current * part.size ? state[1] : 0)
    return counts
  }
  const ring = part.policy.precision + 1
  for (const bucket of bucketsAt(part, now)) counts.set(bucket, state[1 + (bucket % ring)])
  return counts
}

export function bucketKey(part: Part, bucket: number): string {
  return `${part.base}:${bucket}`
}

/** The buckets a counter reads at `now`, oldest first (none before the epoch). */
export function bucketsAt(part: Part, now: number): number[] {
  const current = Math.floor(now / part.size)
  const buckets: number[] = []
  for (let bucket = Math.max(0, current - part.older); bucket <= current; bucket++) {
    buckets.push(bucket)
  }
  return buckets
}

/**
 * Lifetime of a bucket: it counts for at most two windows after it opens (the seeds' TTL),
 * plus one second because memcached's clock ticks in whole seconds and could otherwise expire
 * a short window's bucket while it still counts.
 */
export function counterTtlSeconds(policy: Policy): number {
  return (2 * policy.windowMs) / 1000 + 1
}

/**
 * The state vector core's transition reads, built from bucket counts: fixed-window
 * [windowStart, count]; sliding-window [newestBucket, ring of precision + 1 counters]. The
 * newest bucket is the current one: a bucket written later than `now` (by a server with a
 * clock ahead) is not read, so the clock is never held back as MemoryStore holds it.
 */
export function counterState(part: Part, now: number, count: (bucket: number) => number): number[] {
  const current = Math.floor(now / part.size)
  if (!part.ring) return [current * part.size, count(current)]
  const ring = part.policy.precision + 1
  const state = new Array<number>(ring + 1).fill(0)
  state[0] = current
  for (const bucket of bucketsAt(part, now)) state[1 + (bucket % ring)] = count(bucket)
  return state
}

/** A meter's state as stored: its numbers joined by commas (all integers, see core's meter.ts). */
export function encodeMeter(state: readonly number[]): Buffer {
  return Buffer.from(state.join(','))
}

/** Parses a meter item; undefined when it is not one (another program wrote the key). */
export function decodeMeter(value: Buffer, slots: number): number[] | undefined {
  const fields = value.toString('latin1').split(',')
  if (fields.length !== slots) return undefined
  const state = fields.map(Number)
  return state.every(Number.isFinite) ? state : undefined
}

/** Parses a counter item (memcached keeps counters as decimal text). */
export function decodeCounter(value: Buffer): number | undefined {
  const count = Number(value.toString('latin1').trim())
  return Number.isSafeInteger(count) && count >= 0 ? count : undefined
}
