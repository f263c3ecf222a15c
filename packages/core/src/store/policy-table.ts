/**
 * Owns the memory store's per-policy tables: every key's state of one policy in one buffer, LRU
 * links beside it, growth within the store's byte budget, and the sweep of expired keys.
 */
import type { Algorithm } from '../algorithms'
import type { Policy } from '../policy'
import { ABSENT, KeyIndex, type KeyHash, type RowKeys } from './key-index'
import {
  hashHeldKey,
  holdsKey,
  KEY_FIELD_BYTES,
  ListedKeys,
  readKey,
  releaseKey,
  writeKey,
} from './row-keys'

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
/** Bytes of one segment of a policy's table, at most (a wider row gets a segment of its own). */
const SEGMENT_BYTES = 256 * 1024
/** Doubles of a row after its state: the LRU links, then the key field. */
const TAIL = 1 + KEY_FIELD_BYTES / 8

/**
 * The keys of one policy, no object and no string per key: row `r` holds the state's slots as
 * doubles, then its LRU links as two int32 (the next newer and the next older row, NONE at the
 * ends) in one double's place, then the key itself in 16 bytes (row-keys.ts). A key's state,
 * links and key share a cache line or two, so a decision on a cold key waits for memory once
 * there rather than once per array.
 *
 * Rows live in segments of a fixed number of rows (a power of two, up to SEGMENT_BYTES each),
 * one ArrayBuffer per segment: the table grows by a segment, and nothing is copied. A buffer
 * that doubled by copying kept the old one alive during the copy (and until a collection after
 * it), twice `maxBytes` at the peak; segments keep every moment within the budget.
 */
export class PolicyTable implements RowKeys {
  private readonly index: KeyIndex
  /** The state of each segment (`vectorOf`), and the same buffer as int32 and as bytes. */
  private states: Float64Array[] = []
  private links: Int32Array[] = []
  private bytes: Uint8Array[] = []
  /** Keys that do not fit a row's field. */
  private readonly listed = new ListedKeys()
  /** Rows per segment: 2^shift. */
  private readonly shift: number
  private readonly mask: number
  private freeRows: number[] = []
  private capacity = 0
  /** The most recently used row (NONE when empty); a hot key's row is usually this one. */
  private newest = NONE
  /** The key of the newest row, while known: a hot key is found by one string comparison. */
  private newestKey: string | undefined
  private oldest = NONE
  /** State slots per row. */
  slots: number
  /** Doubles per row: the slots, then the links and the key. */
  stride: number

  constructor(
    readonly algorithm: Algorithm,
    slots: number,
    private readonly maxKeys: number,
    private readonly budget: ByteBudget,
  ) {
    this.slots = slots
    this.stride = slots + TAIL
    // A sliding-log row holds `limit` timestamps: a large limit gets small segments, so it
    // never reserves much before the keys come.
    const rows = Math.max(1, Math.min(1024, maxKeys, Math.floor(SEGMENT_BYTES / (this.stride * 8))))
    this.shift = 31 - Math.clz32(rows)
    this.mask = (1 << this.shift) - 1
    this.index = new KeyIndex(this, maxKeys)
    // The first segment, even past maxBytes: a limit must be able to hold one key.
    this.addSegment(Math.max(1, Math.min(1 << this.shift, this.roomRows())))
  }

  /** Keys held. */
  get size(): number {
    return this.index.size
  }

  /** The state vector row `row` is in (its slots start at `baseOf(row)`). */
  vectorOf(row: number): Float64Array {
    return this.states[row >>> this.shift]
  }

  /** Where row `row`'s slots start in `vectorOf(row)`. */
  baseOf(row: number): number {
    return (row & this.mask) * this.stride
  }

  /** Rows the budget still has room for. */
  private roomRows(): number {
    return Math.floor((this.budget.max - this.budget.allocated) / (this.stride * 8))
  }

  /** Adds a segment of `rows` rows (the last one may be short: it ends where the budget does). */
  private addSegment(rows: number): void {
    const bytes = rows * this.stride * 8
    this.budget.allocated += bytes
    const buffer = new ArrayBuffer(bytes)
    this.states.push(new Float64Array(buffer))
    this.links.push(new Int32Array(buffer))
    this.bytes.push(new Uint8Array(buffer))
    this.capacity += rows
  }

  /** Sliding-log state grows with the limit; a soft or elastic allowance may need wider rows. */
  widen(slots: number): void {
    const stride = slots + TAIL
    // Wider rows are needed to decide at all: they are allocated even past maxBytes. One
    // segment is copied at a time.
    this.budget.allocated += this.capacity * (stride - this.stride) * 8
    for (let k = 0; k < this.states.length; k++) {
      const rows = this.states[k].length / this.stride
      const buffer = new ArrayBuffer(rows * stride * 8)
      const bytes = new Uint8Array(buffer)
      const old = new Uint8Array(this.states[k].buffer)
      for (let row = 0; row < rows; row++) {
        const from = row * this.stride * 8
        const to = row * stride * 8
        bytes.set(old.subarray(from, from + this.slots * 8), to) // the state; new slots stay 0
        // The links and the key.
        bytes.set(old.subarray(from + this.slots * 8, from + this.stride * 8), to + slots * 8)
      }
      this.states[k] = new Float64Array(buffer)
      this.links[k] = new Int32Array(buffer)
      this.bytes[k] = bytes
    }
    this.slots = slots
    this.stride = stride
  }

  /** The key's row, touched as most recently used; NONE when absent. */
  find(key: string): number {
    // A hot key is usually the newest row: one string comparison instead of a hash.
    if (key === this.newestKey) return this.newest
    const row = this.index.find(key)
    if (row !== NONE) {
      if (row !== this.newest) this.touch(row)
      this.newestKey = key
    }
    return row
  }

  holds(row: number, key: string): boolean {
    return holdsKey(
      this.bytes[row >>> this.shift],
      this.linksOf(row),
      this.keyField(row),
      key,
      this.listed,
    )
  }

  keyAt(row: number): string {
    return readKey(
      this.bytes[row >>> this.shift],
      this.linksOf(row),
      this.keyField(row),
      this.listed,
    )
  }

  hashAt(row: number, hash: KeyHash, seed: number): number {
    const bytes = this.bytes[row >>> this.shift]
    return hashHeldKey(bytes, this.linksOf(row), this.keyField(row), this.listed, hash, seed)
  }

  /** Where row's key field starts, in bytes of its segment. */
  private keyField(row: number): number {
    return ((row & this.mask) * this.stride + this.slots + 1) * 8
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
    } else if (this.canGrow()) {
      this.grow()
      row = this.index.size
    } else {
      row = this.oldest
      this.unlink(row)
      this.forget(row)
    }
    const base = this.baseOf(row)
    this.vectorOf(row).fill(0, base, base + this.slots)
    writeKey(
      this.bytes[row >>> this.shift],
      this.linksOf(row),
      this.keyField(row),
      key,
      this.listed,
    )
    this.index.add(key, row)
    this.linkNewest(row)
    this.newestKey = key
    return row
  }

  /** Takes row's key out of the index, then out of the row. */
  private forget(row: number): void {
    this.index.remove(row)
    releaseKey(this.bytes[row >>> this.shift], this.linksOf(row), this.keyField(row), this.listed)
  }

  delete(key: string): void {
    const row = this.index.find(key)
    if (row !== NONE) this.deleteRow(row)
  }

  private deleteRow(row: number): void {
    this.forget(row)
    this.unlink(row)
    this.freeRows.push(row)
  }

  /** Forgets keys whose state is empty again, from the least recently used end. */
  sweep(now: number, budget: number): void {
    while (budget-- > 0 && this.oldest !== NONE) {
      const row = this.oldest
      const expiresAt = this.algorithm.expiresAt(
        this.vectorOf(row),
        this.baseOf(row),
        this.policyForSweep,
      )
      if (expiresAt > now) return
      this.deleteRow(row)
    }
  }

  /** The policy last used with this table (its expiry depends on the window, not on scaling). */
  policyForSweep!: Policy

  /**
   * Whether a segment can be added: below maxKeys, and a whole row more fits the budget. Only
   * the last segment is ever short (where maxKeys or the budget ends), so no later one follows it.
   */
  private canGrow(): boolean {
    return (
      this.capacity < this.maxKeys &&
      this.capacity === this.states.length << this.shift &&
      this.roomRows() > 0
    )
  }

  /** One more segment, as long as maxKeys and the budget allow. */
  private grow(): void {
    const rows = Math.min(1 << this.shift, this.maxKeys - this.capacity, this.roomRows())
    this.addSegment(rows)
  }

  /** Makes a row other than the newest the newest. */
  private touch(row: number): void {
    this.unlink(row)
    this.linkNewest(row)
  }

  private linkNewest(row: number): void {
    const links = this.linksOf(row)
    const at = this.link(row)
    links[at] = NONE
    links[at + 1] = this.newest
    if (this.newest !== NONE) this.linksOf(this.newest)[this.link(this.newest)] = row
    this.newest = row
    if (this.oldest === NONE) this.oldest = row
  }

  private unlink(row: number): void {
    const links = this.linksOf(row)
    const at = this.link(row)
    const newer = links[at]
    const older = links[at + 1]
    if (newer !== NONE) this.linksOf(newer)[this.link(newer) + 1] = older
    else {
      this.newest = older
      this.newestKey = undefined
    }
    if (older !== NONE) this.linksOf(older)[this.link(older)] = newer
    else this.oldest = newer
  }

  /** Where row's newer link is (its older one follows), in int32 units. */
  private link(row: number): number {
    return ((row & this.mask) * this.stride + this.slots) * 2
  }

  /** The links of row `row` are in this segment's int32 view, at `link(row)`. */
  private linksOf(row: number): Int32Array {
    return this.links[row >>> this.shift]
  }
}
