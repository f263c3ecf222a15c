/**
 * Owns the memory store's key index: keys to rows, by open addressing over a seeded hash, with
 * an overflow map for keys that probe too far.
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

const EMPTY = -1
/** The answer for a key the index does not hold. */
export const ABSENT = -1
/** Slots a key may sit past its home slot; a key that finds none free goes to the overflow map. */
const MAX_PROBE = 32
const FIRST_SLOTS = 2048

/**
 * Key -> row of one policy table. Open addressing with linear probing over one Int32Array of
 * (hash, row) pairs, at most half full, so a lookup usually reads one cache line and then the
 * key itself. Why not a `Map`: on a million keys built per request (as a server builds them),
 * V8's `Map.get` took about twice as long (a fresh string's hash is computed either way, then
 * the Map walks a bucket chain spread over its entries), and it holds about 29 bytes per key
 * where this holds 16-32.
 *
 * Keys are attacker-chosen (IPs, tokens), so the hash is seeded per index, and a key whose
 * probe would pass MAX_PROBE slots goes to a `Map` instead: however keys collide, a lookup
 * costs at most MAX_PROBE slots and one `Map.get`.
 */
export class KeyIndex {
  /** Keys that hold a row: count in the slots plus the overflow map. */
  size = 0
  /** (hash, row) per slot; row EMPTY when free. */
  private slots = new Int32Array(FIRST_SLOTS * 2).fill(EMPTY)
  private mask = FIRST_SLOTS - 1
  /** Keys in the slots, not counting the overflow. */
  private inSlots = 0
  private overflow: Map<string, number> | undefined
  /** row -> key, for comparing keys and for finding a row's slot again. */
  private keys: string[]
  private readonly seed: number
  /** The last key a lookup missed and its hash: an insert usually follows with the same key. */
  private missedKey: string | undefined
  private missedHash = 0

  constructor(
    rows: number,
    private readonly hash: KeyHash = hashKey,
  ) {
    this.keys = new Array<string>(rows)
    this.seed = globalThis.crypto.getRandomValues(new Int32Array(1))[0]
  }

  /** The key of a row the index holds. */
  keyAt(row: number): string {
    return this.keys[row]
  }

  /**
   * Room for rows below `rows` (the table grew by a segment). The key list doubles when it must
   * grow, so a table that grows a segment at a time copies it O(1) times per row.
   */
  reserveRows(rows: number): void {
    if (rows <= this.keys.length) return
    const keys = new Array<string>(Math.max(rows, this.keys.length * 2))
    for (let row = 0; row < this.keys.length; row++) keys[row] = this.keys[row]
    this.keys = keys
  }

  /** The key's row, or ABSENT. */
  find(key: string): number {
    const hash = this.hash(key, this.seed)
    const slots = this.slots
    const mask = this.mask
    let slot = hash & mask
    for (let probe = 0; probe < MAX_PROBE; probe++) {
      const row = slots[slot * 2 + 1]
      if (row === EMPTY) break
      if (slots[slot * 2] === hash && this.keys[row] === key) return row
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

  /** Records key -> row; the key must be absent and the row free. */
  add(key: string, row: number): void {
    const hash = key === this.missedKey ? this.missedHash : this.hash(key, this.seed)
    this.missedKey = undefined
    this.keys[row] = key
    this.size++
    if (!this.place(hash, row)) {
      this.overflow ??= new Map()
      this.overflow.set(key, row)
      return
    }
    this.inSlots++
    if (this.inSlots * 2 > this.mask + 1) this.resize()
  }

  /** Forgets the key of `row`. */
  remove(row: number): void {
    const key = this.keys[row]
    this.keys[row] = ''
    this.size--
    const slots = this.slots
    const mask = this.mask
    let slot = this.hash(key, this.seed) & mask
    for (let probe = 0; probe < MAX_PROBE; probe++) {
      if (slots[slot * 2 + 1] === row) {
        this.inSlots--
        this.closeGap(slot)
        return
      }
      if (slots[slot * 2 + 1] === EMPTY) break
      slot = (slot + 1) & mask
    }
    this.overflow?.delete(key)
  }

  /** Puts (hash, row) in the first free slot within MAX_PROBE of its home; false if none. */
  private place(hash: number, row: number): boolean {
    const slots = this.slots
    const mask = this.mask
    let slot = hash & mask
    for (let probe = 0; probe < MAX_PROBE; probe++) {
      if (slots[slot * 2 + 1] === EMPTY) {
        slots[slot * 2] = hash
        slots[slot * 2 + 1] = row
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
      const row = slots[slot * 2 + 1]
      if (row === EMPTY) break
      const home = slots[slot * 2] & mask
      if (((slot - home) & mask) >= ((slot - gap) & mask)) {
        slots[gap * 2] = slots[slot * 2]
        slots[gap * 2 + 1] = row
        gap = slot
      }
    }
    slots[gap * 2 + 1] = EMPTY
  }

  /** Twice the slots; overflowed keys get another chance at a slot of their own. */
  private resize(): void {
    const old = this.slots
    const count = (this.mask + 1) * 2
    this.slots = new Int32Array(count * 2).fill(EMPTY)
    this.mask = count - 1
    this.inSlots = 0
    for (let slot = 0; slot < old.length; slot += 2) {
      const row = old[slot + 1]
      if (row === EMPTY) continue
      if (this.place(old[slot], row)) this.inSlots++
      else (this.overflow ??= new Map()).set(this.keys[row], row)
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
