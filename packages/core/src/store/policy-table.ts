/**
 * Owns the memory store's per-policy tables: every key's state of one policy in one buffer, LRU
 * links beside it, growth within the store's byte budget, and the sweep of expired keys.
 */
import type { Algorithm } from '../algorithms'
import type { Policy } from '../policy'
import { ABSENT, KeyIndex } from './key-index'

/** The state bytes the tables of one store may allocate together (`maxBytes`). */
export class ByteBudget {
  allocated = 0
  constructor(readonly max: number) {}

  /** Whether `bytes` more still fit. */
  fits(bytes: number): boolean {
    return this.allocated + bytes <= this.max
  }
}

export const NONE = ABSENT
/** Bytes a policy's table allocates before it holds its first keys. */
const FIRST_ALLOCATION = 256 * 1024

/**
 * The keys of one policy in one buffer, no object per key: row `r` holds the state's slots as
 * doubles, then its LRU links as two int32 (the next newer and the next older row, NONE at the
 * ends) in the last double's place. A key's state and links share a cache line or two, so a
 * decision on a cold key waits for memory once there rather than once per array.
 */
export class PolicyTable {
  private readonly index: KeyIndex
  private state!: Float64Array
  private links!: Int32Array
  private freeRows: number[] = []
  private capacity: number
  /** The most recently used row (NONE when empty); a hot key's row is usually this one. */
  private newest = NONE
  private oldest = NONE
  /** State slots per row. */
  slots: number
  /** Doubles per row: the slots, then the links. */
  stride: number

  constructor(
    readonly algorithm: Algorithm,
    slots: number,
    private readonly maxKeys: number,
    private readonly budget: ByteBudget,
  ) {
    this.slots = slots
    this.stride = slots + 1
    // The first allocation holds up to 1024 rows but never more than FIRST_ALLOCATION bytes:
    // a sliding-log row holds `limit` timestamps, and a large limit must not reserve
    // gigabytes before the second key arrives (the table doubles as keys come).
    const rowBytes = this.stride * 8
    const room = Math.floor((budget.max - budget.allocated) / rowBytes)
    this.capacity = Math.max(
      1,
      Math.min(maxKeys, 1024, Math.floor(FIRST_ALLOCATION / rowBytes), room),
    )
    budget.allocated += this.capacity * rowBytes
    this.allocate(new ArrayBuffer(this.capacity * this.stride * 8))
    this.index = new KeyIndex(this.capacity)
  }

  /** Keys held. */
  get size(): number {
    return this.index.size
  }

  get vector(): Float64Array {
    return this.state
  }

  private allocate(buffer: ArrayBuffer): void {
    this.state = new Float64Array(buffer)
    this.links = new Int32Array(buffer)
  }

  /** Where row's newer link is (its older one follows), in int32 units. */
  private link(row: number): number {
    return (row * this.stride + this.slots) * 2
  }

  /** Sliding-log state grows with the limit; a soft or elastic allowance may need wider rows. */
  widen(slots: number): void {
    const stride = slots + 1
    // Wider rows are needed to decide at all: they are allocated even past maxBytes.
    this.budget.allocated += this.capacity * (stride - this.stride) * 8
    const buffer = new ArrayBuffer(this.capacity * stride * 8)
    const bytes = new Uint8Array(buffer)
    const old = new Uint8Array(this.state.buffer)
    for (let row = 0; row < this.capacity; row++) {
      const from = row * this.stride * 8
      const to = row * stride * 8
      bytes.set(old.subarray(from, from + this.slots * 8), to) // the state; new slots stay 0
      bytes.set(old.subarray(from + this.slots * 8, from + this.stride * 8), to + slots * 8) // links
    }
    this.allocate(buffer)
    this.slots = slots
    this.stride = stride
  }

  /** The key's row, touched as most recently used; NONE when absent. */
  find(key: string): number {
    // A hot key is usually the newest row: one string comparison instead of a hash.
    if (this.newest !== NONE && this.index.keyAt(this.newest) === key) return this.newest
    const row = this.index.find(key)
    if (row !== NONE) this.touch(row)
    return row
  }

  /** The key's row without touching it; NONE when absent. */
  rowOf(key: string): number {
    return this.index.find(key)
  }

  /** A new zeroed row for the key, evicting the least recently used key when full. */
  insert(key: string): number {
    let row: number
    if (this.freeRows.length > 0) {
      row = this.freeRows.pop() as number
    } else if (this.index.size < this.capacity) {
      row = this.index.size
    } else if (this.capacity < this.maxKeys && this.budget.fits(this.growthBytes())) {
      this.grow()
      row = this.index.size
    } else {
      row = this.oldest
      this.unlink(row)
      this.index.remove(row)
    }
    this.state.fill(0, row * this.stride, row * this.stride + this.slots)
    this.index.add(key, row)
    this.linkNewest(row)
    return row
  }

  delete(key: string): void {
    const row = this.index.find(key)
    if (row !== NONE) this.deleteRow(row)
  }

  private deleteRow(row: number): void {
    this.index.remove(row)
    this.unlink(row)
    this.freeRows.push(row)
  }

  /** Forgets keys whose state is empty again, from the least recently used end. */
  sweep(now: number, budget: number): void {
    while (budget-- > 0 && this.oldest !== NONE) {
      const row = this.oldest
      if (this.algorithm.expiresAt(this.state, row * this.stride, this.policyForSweep) > now) return
      this.deleteRow(row)
    }
  }

  /** The policy last used with this table (its expiry depends on the window, not on scaling). */
  policyForSweep!: Policy

  /** The capacity a growth would reach: double, within maxKeys and the store's byte budget. */
  private grownCapacity(): number {
    const rowBytes = this.stride * 8
    const room = Math.floor((this.budget.max - this.budget.allocated) / rowBytes)
    return Math.min(this.maxKeys, this.capacity * 2, this.capacity + room)
  }

  /** Bytes a growth adds (0 when there is no room for even one more row). */
  private growthBytes(): number {
    const extra = this.grownCapacity() - this.capacity
    return extra > 0 ? extra * this.stride * 8 : Infinity
  }

  private grow(): void {
    const capacity = this.grownCapacity()
    this.budget.allocated += (capacity - this.capacity) * this.stride * 8
    const buffer = new ArrayBuffer(capacity * this.stride * 8)
    // Bytes, not doubles: the links' bit patterns must come through unchanged.
    new Uint8Array(buffer).set(new Uint8Array(this.state.buffer))
    this.index.reserveRows(capacity)
    this.allocate(buffer)
    this.capacity = capacity
  }

  /** Makes a row other than the newest the newest. */
  private touch(row: number): void {
    this.unlink(row)
    this.linkNewest(row)
  }

  private linkNewest(row: number): void {
    const links = this.links
    const at = this.link(row)
    links[at] = NONE
    links[at + 1] = this.newest
    if (this.newest !== NONE) links[this.link(this.newest)] = row
    this.newest = row
    if (this.oldest === NONE) this.oldest = row
  }

  private unlink(row: number): void {
    const links = this.links
    const at = this.link(row)
    const newer = links[at]
    const older = links[at + 1]
    if (newer !== NONE) links[this.link(newer) + 1] = older
    else this.newest = older
    if (older !== NONE) links[this.link(older)] = newer
    else this.oldest = newer
  }
}
