/**
 * Owns the Space-Saving summary (Metwally, Agrawal, El Abbadi 2005): the heaviest items of a
 * stream in memory fixed by `k`. Each of the k slots holds an item, an upper bound of its count
 * and the most that bound may overstate it; a new item past k takes the smallest slot's place and
 * inherits its count as error. After a stream of total weight N, every count overstates the
 * item's true count by at most N/k, and every item of true count above N/k is in the summary.
 */

/** One item of a summary: `count - error <= true count <= count`. */
export interface HeavyHitter {
  readonly key: string
  /** An upper bound of the item's count. */
  readonly count: number
  /** The most `count` may overstate the true count (0 when the item was counted from its first). */
  readonly error: number
}

interface Slot {
  key: string
  count: number
  error: number
  /** Position in the heap. */
  at: number
}

/** A min-heap of k slots by count, with an index by key: O(log k) per item. */
export class SpaceSaving {
  private readonly heap: Slot[] = []
  private readonly index = new Map<string, Slot>()
  /** Total weight offered. */
  total = 0

  constructor(readonly k: number) {}

  get size(): number {
    return this.heap.length
  }

  /** The count a key outside the summary may have at most: the smallest slot's, once full. */
  get floor(): number {
    return this.heap.length < this.k ? 0 : this.heap[0].count
  }

  offer(key: string, weight = 1): void {
    this.total += weight
    let slot = this.index.get(key)
    if (slot !== undefined) {
      slot.count += weight
      this.down(slot.at)
      return
    }
    if (this.heap.length < this.k) {
      slot = { key, count: weight, error: 0, at: this.heap.length }
      this.heap.push(slot)
      this.index.set(key, slot)
      this.up(slot.at)
      return
    }
    slot = this.heap[0]
    this.index.delete(slot.key)
    slot.key = key
    slot.error = slot.count
    slot.count += weight
    this.index.set(key, slot)
    this.down(0)
  }

  /** The summary's slot of `key`, if it holds one. */
  get(key: string): HeavyHitter | undefined {
    return this.index.get(key)
  }

  /** Every slot, heaviest first. */
  items(): HeavyHitter[] {
    return this.heap
      .map(({ key, count, error }) => ({ key, count, error }))
      .sort((a, b) => b.count - a.count || a.error - b.error)
  }

  private up(at: number): void {
    const heap = this.heap
    const slot = heap[at]
    while (at > 0) {
      const parent = (at - 1) >> 1
      if (heap[parent].count <= slot.count) break
      heap[at] = heap[parent]
      heap[at].at = at
      at = parent
    }
    heap[at] = slot
    slot.at = at
  }

  private down(at: number): void {
    const heap = this.heap
    const slot = heap[at]
    const n = heap.length
    for (;;) {
      let child = 2 * at + 1
      if (child >= n) break
      if (child + 1 < n && heap[child + 1].count < heap[child].count) child++
      if (heap[child].count >= slot.count) break
      heap[at] = heap[child]
      heap[at].at = at
      at = child
    }
    heap[at] = slot
    slot.at = at
  }
}
