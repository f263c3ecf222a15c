/**
 * Owns a batch's view of its rows: what was read (state, expiry, version), read as empty once
 * expired, changed in place by the operations of the batch in order, and what to write back.
 */
import type { Policy } from '@sluice/core'
import { algorithmOf } from '@sluice/core/adapter'
import { decodeState } from './rows'

/** A row as read: absent rows have no version. */
export interface StoredRow {
  readonly bytes: Uint8Array
  readonly expiresAt: number
  /** The row's xmin as read: the compare-and-set checks it is unchanged. */
  readonly version: string
}

interface Entry {
  stored: StoredRow | undefined
  /** The state the batch's operations see and change; undefined until first read. */
  state: number[] | undefined
  expiresAt: number
  /** The policy that last changed it (its expiry), or 'block'. */
  owner: Policy | 'block' | undefined
  dirty: boolean
}

/** A row to write: hex key, state, expiry (ms), version read ('' when there was no row). */
export interface RowWrite {
  readonly key: string
  readonly state: readonly number[]
  readonly expiresAt: number
  readonly version: string
}

export class RowView {
  private readonly entries = new Map<string, Entry>()

  constructor(rows: ReadonlyMap<string, StoredRow>) {
    for (const [key, stored] of rows) {
      this.entries.set(key, {
        stored,
        state: undefined,
        expiresAt: stored.expiresAt,
        owner: undefined,
        dirty: false,
      })
    }
  }

  /**
   * The state of `policy` in `row` at `now`, as wide as the policy needs: all zeros when absent
   * or expired. The same array each time within a batch: changes to it are the batch's.
   */
  state(row: string, policy: Policy, now: number): number[] {
    const slots = algorithmOf(policy).slots(policy)
    const entry = this.entry(row)
    if (entry.state === undefined) {
      const stored = entry.stored
      const live = stored !== undefined && stored.expiresAt > now
      entry.state = live ? this.decode(row, stored.bytes, slots) : new Array<number>(slots).fill(0)
      if (!live) entry.expiresAt = 0
    } else if (entry.expiresAt !== 0 && entry.expiresAt <= now) {
      // Expired by the `now` of a later operation of the batch (the limiter's clock).
      entry.state = new Array<number>(slots).fill(0)
      entry.expiresAt = 0
    }
    while (entry.state.length < slots) entry.state.push(0)
    return entry.state
  }

  /** Whether `row` holds live state at `now` (a refund on nothing gives nothing back). */
  has(row: string, now: number): boolean {
    const entry = this.entries.get(row)
    return entry !== undefined && entry.expiresAt > now
  }

  /** After `policy` changed `row`'s state: its new expiry is the policy's (core's expiresAt). */
  changed(row: string, policy: Policy): void {
    const entry = this.entry(row)
    const state = entry.state as number[]
    entry.expiresAt = Math.ceil(algorithmOf(policy).expiresAt(state, 0, policy))
    entry.owner = policy
    entry.dirty = true
  }

  /** The block's end on `row` (0: none) at `now`. */
  blockedUntil(row: string, now: number): number {
    const entry = this.entries.get(row)
    return entry !== undefined && entry.expiresAt > now ? entry.expiresAt : 0
  }

  /** Sets the block on `row` to end at `until` (0: lifted). */
  setBlock(row: string, until: number): void {
    const entry = this.entry(row)
    entry.state = until > 0 ? [until] : []
    entry.expiresAt = until
    entry.owner = 'block'
    entry.dirty = true
  }

  /** Forgets `row` (reset). */
  clear(row: string): void {
    const entry = this.entry(row)
    entry.state = []
    entry.expiresAt = 0
    entry.owner = undefined
    entry.dirty = true
  }

  /** Rows to write back: changed ones, except empty rows that were not there to begin with. */
  writes(): RowWrite[] {
    const out: RowWrite[] = []
    for (const [key, entry] of this.entries) {
      if (!entry.dirty) continue
      if (entry.stored === undefined && entry.expiresAt === 0) continue
      const state = entry.expiresAt === 0 ? [] : (entry.state as number[])
      out.push({ key, state, expiresAt: entry.expiresAt, version: entry.stored?.version ?? '' })
    }
    return out
  }

  private entry(row: string): Entry {
    let entry = this.entries.get(row)
    if (entry === undefined) {
      entry = { stored: undefined, state: undefined, expiresAt: 0, owner: undefined, dirty: false }
      this.entries.set(row, entry)
    }
    return entry
  }

  private decode(row: string, bytes: Uint8Array, slots: number): number[] {
    const state = decodeState(bytes, slots)
    if (state === undefined) {
      throw new Error(`row ${JSON.stringify(row)} holds a state this store did not write`)
    }
    return state
  }
}
