/**
 * Owns evicting a Map's oldest key (insertion order) at a bound: the bounded caches and
 * counters of the packages. A new `keys()` iterator per eviction finds the first live key
 * past every entry deleted before it, which V8 leaves in place until it rebuilds the table,
 * so at 10,000 keys each eviction walked thousands of them; an iterator kept between
 * evictions walks each once.
 */
export class OldestFirst<K> {
  private keys: Iterator<K>

  constructor(private readonly map: Map<K, unknown>) {
    this.keys = map.keys()
  }

  /** Deletes the oldest key still in the map; nothing when it is empty. */
  evict(): void {
    let next = this.keys.next()
    // An iterator that reached the end stays there: a new one starts from the first again.
    if (next.done === true) {
      this.keys = this.map.keys()
      next = this.keys.next()
    }
    if (next.done !== true) this.map.delete(next.value)
  }
}
