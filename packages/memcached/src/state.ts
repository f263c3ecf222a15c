/**
 * Owns reading a key's state from memcached items and deciding on it with core's transitions,
 * and the errors the store reports.
 */
import { ConfigError, StoreError, type PolicyOutcome } from '@sluice/core'
import { withoutStack } from '@sluice/core/adapter'
import { bucketKey, bucketsAt, counterState, decodeCounter, decodeMeter, type Part } from './layout'
import type { Item } from './wire'

/** A meter item to write back by CAS: its state and the policies (parts) sharing it. */
export type MeterWrite = { key: string; state: number[]; cas: Buffer | undefined; parts: Part[] }

/** The items a request reads: the buckets that count at `now`, and each meter's item. */
export function readKeys(parts: readonly Part[], now: number): string[] {
  const names = new Set<string>()
  for (const part of parts) {
    if (!part.counter) names.add(part.base)
    else for (const bucket of bucketsAt(part, now)) names.add(bucketKey(part, bucket))
  }
  return [...names]
}

export function readState(part: Part, items: ReadonlyMap<string, Item>, now: number): number[] {
  if (!part.counter) {
    const item = items.get(part.base)
    return item === undefined
      ? new Array<number>(part.algorithm.slots(part.policy)).fill(0)
      : meterState(part, item)
  }
  return counterState(part, now, (bucket) => {
    const item = items.get(bucketKey(part, bucket))
    if (item === undefined) return 0
    const count = decodeCounter(item.value)
    if (count === undefined) throw foreignItem(bucketKey(part, bucket))
    return count
  })
}

export function meterState(part: Part, item: Item): number[] {
  const state = decodeMeter(item.value, part.algorithm.slots(part.policy))
  if (state === undefined) throw foreignItem(part.base)
  return state
}

export function decide(
  part: Part,
  state: number[],
  now: number,
  cost: number,
  maxDelayMs?: number,
): PolicyOutcome {
  const out = { allowed: false, remaining: 0, resetMs: 0, retryAfterMs: 0, delayMs: 0 }
  part.algorithm.decide(state, 0, now, part.policy, cost, out, maxDelayMs)
  return out
}

/** Every policy's answer while the key's block (an item holding its end time) holds at `now`. */
export function blockedOutcomes(
  item: Item | undefined,
  parts: readonly Part[],
  now: number,
): PolicyOutcome[] | undefined {
  if (item === undefined) return undefined
  const until = Number(item.value.toString('latin1'))
  if (!(until > now)) return undefined
  const wait = until - now
  return parts.map(() => ({
    allowed: false,
    remaining: 0,
    resetMs: wait,
    retryAfterMs: wait,
    delayMs: 0,
  }))
}

/** Index of the current bucket's count in a counter state (see counterState). */
function currentSlot(part: Part, state: readonly number[]): number {
  return part.ring ? 1 + (state[0] % (part.policy.precision + 1)) : 1
}

export function currentCount(part: Part, state: readonly number[]): number {
  return state[currentSlot(part, state)]
}

export function setCurrentCount(part: Part, state: number[], count: number): void {
  state[currentSlot(part, state)] = count
}

/** Item lifetime: until the state is empty again (core's expiresAt), plus a second of slack. */
export function meterTtl(write: MeterWrite, now: number): number {
  let until = now
  for (const part of write.parts)
    until = Math.max(until, part.algorithm.expiresAt(write.state, 0, part.policy))
  return (until - now) / 1000 + 1
}

export function contention(attempts: number): StoreError {
  return new StoreError(
    `MemcachedStore: another process changed the same key in each of ${attempts} ` +
      'compare-and-swap attempts (raise `casAttempts`, or use RedisStore for hot keys)',
  )
}

export function foreignItem(name: string): Error {
  return new Error(`item ${JSON.stringify(name)} holds a value this store did not write`)
}

export function storeError(operation: string, error: unknown): Error {
  if (error instanceof StoreError || error instanceof ConfigError) return error
  const reason = error instanceof Error ? error.message : String(error)
  // The cause keeps memjs's stack; a hung server fails thousands of calls at once.
  return withoutStack(
    () => new StoreError(`MemcachedStore ${operation} failed: ${reason}`, { cause: error }),
  )
}
