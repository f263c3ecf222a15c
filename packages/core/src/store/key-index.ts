/**
 * Owns the memory store's key index: keys to rows, by open addressing over a seeded hash, with
 * an overflow map for keys that probe too far. The keys themselves stay in the rows (RowKeys).
 */
/** A key's 32-bit hash; seeded, so that which keys collide differs from process to process. */
export type KeyHash = (key: string, seed: number) => number

/**
 * FNV-1a over the UTF-16 code units, from a random seed, then a final mix so that the low bits
 * (the home slot) depend on every character.
 */
export const hashKey: KeyHash = (key, seed) => {
  let hash = seed ^ key.length
  for (let i = 0; i < key.length; i++) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193)
  hash ^= hash >>> 16
  hash = Math.imul(hash, 0x85ebca6b)
  return hash ^ (hash >>> 13)
}

/**
 * hashKey over `length` character codes stored from `from` (a row's key field), without
 * building the string; undefined when `hash` is another function.
 */
export function hashCodes(
  hash: KeyHash,
  codes: Uint8Array,
  from: number,
  length: number,
  seed: number,
): number | undefined {
  if (hash !== hashKey) return undefined
  let h = seed ^ length
  for (let i = from; i < from + length; i++) h = Math.imul(h ^ codes[i], 0x01000193)
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  return h ^ (h >>> 13)
}

/** Where the index reads the keys of its rows: it keeps no copy of them. */
export interface RowKeys {
  /** Whether row `row` holds `key`. */
  holds(row: number, key: string): boolean
  /** The key of row `row`. */
  keyAt(row: number): string
  /** `hash(keyAt(row), seed)`, computed without building the key where it can be. */
  hashAt(row: number, hash: KeyHash, seed: number): number
}

const EMPTY = -1
/** The answer for a key the index does not hold. */
export const ABSENT = -1
/** Slots a key may sit past its home slot; a key that finds none free goes to the overflow map. */
const MAX_PROBE = 32
const FIRST_SLOTS = 2048

/**
 * Key -> row of one policy table. Open addressing with linear probing over one Int32Array of
 * rows, at most half full: a slot costs 4 bytes, 8-16 per key. A lookup compares the key with
 * the row's own (RowKeys) only where the slot's tag agrees: the bits of a slot that its row
 * does not need hold the top bits of the key's hash (11 of them at a million rows), so a probe
 * past another key rarely reads that key's row. Why not a `Map`: on a million keys built per request (as a
 * server builds them), V8's `Map.get` took about twice as long (a fresh string's hash is
 * computed either way, then the Map walks a bucket chain spread over its entries), and it
 * holds about 29 bytes per key and a pointer to a key string.
 *
 * Keys are attacker-chosen (IPs, tokens), so the hash is seeded per index, and a key whose
 * probe would pass MAX_PROBE slots goes to a `Map` instead: however keys collide, a lookup
 * costs at most MAX_PROBE slots and one `Map.get`.
 */
export class KeyIndex {
  /** Keys that hold a row: count in the slots plus the overflow map. */
  size = 0
  /** The row of each slot, under its tag (`tagOf`); EMPTY when free. */
  private slots = new Int32Array(FIRST_SLOTS).fill(EMPTY)
  /** Bits a row number takes: the slot's bits above them, up to the sign, hold the tag. */
  private readonly rowBits: number
  private readonly rowMask: number
  private mask = FIRST_SLOTS - 1
  /** Keys in the slots, not counting the overflow. */
  private inSlots = 0
  private overflow: Map<string, number> | undefined
  private readonly seed: number
  /** The last key a lookup missed and its hash: an insert usually follows with the same key. */
  private missedKey: string | undefined
  private missedHash = 0

  /** `rows`: how many rows the table may ever have (rows run from 0 to rows - 1). */
  constructor(
    private readonly keys: RowKeys,
    rows: number,
    private readonly hash: KeyHash = hashKey,
  ) {
    this.seed = globalThis.crypto.getRandomValues(new Int32Array(1))[0]
    this.rowBits = 32 - Math.clz32(Math.min(Math.max(1, rows - 1), 0x7fffffff))
    this.rowMask = this.rowBits === 31 ? 0x7fffffff : (1 << this.rowBits) - 1
  }

  /** The slot's tag for a hash: its top bits, as many as the row leaves (none past 2^30 rows). */
  private tagOf(hash: number): number {
    return this.rowBits === 31 ? 0 : (hash >>> (this.rowBits + 1)) << this.rowBits
  }

  /** The key's row, or ABSENT. */
  find(key: string): number {
    const hash = this.hash(key, this.seed)
    const slots = this.slots
    const mask = this.mask
    const tag = this.tagOf(hash)
    const rowMask = this.rowMask
    let slot = hash & mask
    for (let probe = 0; probe < MAX_PROBE; probe++) {
      const entry = slots[slot]
      if (entry === EMPTY) break
      if ((entry & ~rowMask) === tag && this.keys.holds(entry & rowMask, key)) {
        return entry & rowMask
      }
      slot = (slot + 1) & mask
    }
    if (this.overflow !== undefined) {
      const row = this.overflow.get(key)
      if (row !== undefined) return row
    }
    this.missedKey = key
    this.missedHash = hash
    return ABSENT
  }

  /** Records key -> row; the key must be absent, and already in the row. */
  add(key: string, row: number): void {
    const hash = key === this.missedKey ? this.missedHash : this.hash(key, this.seed)
    this.missedKey = undefined
    this.size++
    if (!this.place(hash, row)) {
      this.overflow ??= new Map()
      this.overflow.set(key, row)
      return
    }
    this.inSlots++
    if (this.inSlots * 2 > this.mask + 1) this.resize()
  }

  /** Forgets the key of `row`; the row must still hold it. */
  remove(row: number): void {
    this.size--
    const slots = this.slots
    const mask = this.mask
    let slot = this.keys.hashAt(row, this.hash, this.seed) & mask
    for (let probe = 0; probe < MAX_PROBE; probe++) {
      if (slots[slot] !== EMPTY && (slots[slot] & this.rowMask) === row) {
        this.inSlots--
        this.closeGap(slot)
        return
      }
      if (slots[slot] === EMPTY) break
      slot = (slot + 1) & mask
    }
    this.overflow?.delete(this.keys.keyAt(row))
  }

  /** Puts the row in the first free slot within MAX_PROBE of its home; false if none. */
  private place(hash: number, row: number): boolean {
    const slots = this.slots
    const mask = this.mask
    let slot = hash & mask
    for (let probe = 0; probe < MAX_PROBE; probe++) {
      if (slots[slot] === EMPTY) {
        slots[slot] = this.tagOf(hash) | row
        return true
      }
      slot = (slot + 1) & mask
    }
    return false
  }

  /**
   * Empties `gap` and moves back each later key of its run that may sit there (its home is not
   * cyclically within (gap, slot]), so that no lookup stops early at the gap and no key ever
   * moves away from its home (nor past MAX_PROBE).
   */
  private closeGap(gap: number): void {
    const slots = this.slots
    const mask = this.mask
    let slot = gap
    for (;;) {
      slot = (slot + 1) & mask
      const entry = slots[slot]
      if (entry === EMPTY) break
      const home = this.keys.hashAt(entry & this.rowMask, this.hash, this.seed) & mask
      if (((slot - home) & mask) >= ((slot - gap) & mask)) {
        slots[gap] = entry
        gap = slot
      }
    }
    slots[gap] = EMPTY
  }

  /** Twice the slots; overflowed keys get another chance at a slot of their own. */
  private resize(): void {
    const old = this.slots
    const count = (this.mask + 1) * 2
    this.slots = new Int32Array(count).fill(EMPTY)
    this.mask = count - 1
    this.inSlots = 0
    for (let slot = 0; slot < old.length; slot++) {
      if (old[slot] === EMPTY) continue
      const row = old[slot] & this.rowMask
      if (this.place(this.keys.hashAt(row, this.hash, this.seed), row)) this.inSlots++
      else (this.overflow ??= new Map()).set(this.keys.keyAt(row), row)
    }
    const overflow = this.overflow
    if (overflow === undefined) return
    for (const [key, row] of overflow) {
      if (this.place(this.hash(key, this.seed), row)) {
        overflow.delete(key)
        this.inSlots++
      }
    }
    if (overflow.size === 0) this.overflow = undefined
  }
}
