/**
 * Owns the slot contract a store offers for concurrency limits (`store.slots`), the lease a
 * limiter hands out for a slot, and the in-process slots of MemoryStore: per key, the holders
 * and when each lease ends.
 */

import { joinKeyParts } from '../store/key-parts'

/**
 * Where a concurrency limit's slots are kept for a stored client key (the limiter's prefix and
 * the key, as rate states are keyed): apart per limit, as rate limits are apart per policy, so
 * `concurrency: 1` on one route never counts the slots of `concurrency: 5` on another; two
 * limiters with the same limit on one store and key share their slots.
 */
export function concurrencySlotKey(storedKey: string, limit: number): string {
  return joinKeyParts(storedKey, `c${limit}`)
}

/** A slot an admitted request holds. */
export interface SlotLease {
  /** Gives the slot back: the first call releases it; later calls do nothing (and are counted). */
  release(): Promise<void>
  /** True once `release` was called. */
  readonly released: boolean
}

/** One holder's call about one key's slots. `now` is the limiter's clock (ms). */
export interface SlotRequest {
  readonly key: string
  /** Unique per acquired slot (process and request). */
  readonly holder: string
  readonly limit: number
  readonly leaseMs: number
  readonly now: number
}

export interface SlotReply {
  /** Whether the slot was taken. */
  readonly acquired: boolean
  /** Slots of the key taken after the call (expired leases not counted). */
  readonly inFlight: number
}

/** What a store offers for concurrency limits; all-or-nothing per call, atomic per key. */
export interface SlotStore {
  /** Takes a slot for `holder` when fewer than `limit` are taken (leases past `now` are gone). */
  acquire(request: SlotRequest): Promise<SlotReply>
  /** Extends the holder's lease to `now + leaseMs`; false when it had already lapsed (not renewed). */
  renew(request: SlotRequest): Promise<boolean>
  /** Gives the holder's slot back; false when it held none (never taken, released, or lapsed). */
  release(request: SlotRequest): Promise<boolean>
  /** Slots of `key` taken now. */
  count(key: string, now: number): Promise<number>
}

/** MemoryStore's slots: a map of holders per key, expired leases dropped whenever a key is touched. */
export class MemorySlots implements SlotStore {
  private readonly keys = new Map<string, Map<string, number>>()

  private live(key: string, now: number): Map<string, number> | undefined {
    const holders = this.keys.get(key)
    if (holders === undefined) return undefined
    for (const [holder, until] of holders) if (until <= now) holders.delete(holder)
    if (holders.size === 0) this.keys.delete(key)
    return holders.size === 0 ? undefined : holders
  }

  acquire({ key, holder, limit, leaseMs, now }: SlotRequest): Promise<SlotReply> {
    let holders = this.live(key, now)
    if (holders !== undefined && holders.size >= limit) {
      return Promise.resolve({ acquired: false, inFlight: holders.size })
    }
    if (holders === undefined) this.keys.set(key, (holders = new Map()))
    holders.set(holder, now + leaseMs)
    return Promise.resolve({ acquired: true, inFlight: holders.size })
  }

  renew({ key, holder, leaseMs, now }: SlotRequest): Promise<boolean> {
    const holders = this.live(key, now)
    if (holders?.has(holder) !== true) return Promise.resolve(false)
    holders.set(holder, now + leaseMs)
    return Promise.resolve(true)
  }

  release({ key, holder, now }: SlotRequest): Promise<boolean> {
    const holders = this.live(key, now)
    const held = holders?.delete(holder) === true
    if (holders?.size === 0) this.keys.delete(key)
    return Promise.resolve(held)
  }

  count(key: string, now: number): Promise<number> {
    return Promise.resolve(this.live(key, now)?.size ?? 0)
  }
}
