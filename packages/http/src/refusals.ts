/**
 * Owns counting a key's requests past its limit (per process): the refusals in a row that
 * `ban` and `backoff` read and that `check` reports. A key's count ends when it is admitted
 * again, or one window after its first refusal (later, while a backoff holds it out).
 */

import { OldestFirst } from '@sluice/core/web'

/** Keys remembered at once; past it the oldest go first. */
const MAX_KEYS = 10_000

interface Refused {
  count: number
  until: number
}

export class RefusalCounter {
  private readonly keys = new Map<string, Refused>()
  private readonly oldest = new OldestFirst(this.keys)

  /** Counts one refusal of the key at `now`; its number in the row, this one included. */
  add(key: string, now: number, windowMs: number): number {
    let entry = this.keys.get(key)
    if (entry === undefined || entry.until <= now) {
      if (this.keys.size >= MAX_KEYS) this.oldest.evict()
      entry = { count: 0, until: now + windowMs }
      this.keys.set(key, entry)
    }
    return ++entry.count
  }

  /** Keeps the key's count until at least `until` (a backoff holds the key out that long). */
  extend(key: string, until: number): void {
    const entry = this.keys.get(key)
    if (entry !== undefined && entry.until < until) entry.until = until
  }

  /** The key's refusals in a row at `now`, counting nothing. */
  read(key: string, now: number): number {
    const entry = this.keys.get(key)
    return entry === undefined || entry.until <= now ? 0 : entry.count
  }

  /** The key was admitted: its row of refusals is over. */
  clear(key: string): void {
    this.keys.delete(key)
  }
}
