import { OldestFirst } from '../src/oldest-first'

// The bounded maps' eviction (block cache, refusal counts, memcached's recent keys, Redis's
// sliding-log charges): always the oldest key still held, in insertion order, with one
// iterator kept between evictions.

const keysOf = (map: Map<string, number>): string[] => [...map.keys()]

describe('OldestFirst', () => {
  test('evicts in insertion order, past keys deleted or moved to the end meanwhile', () => {
    const map = new Map(['a', 'b', 'c', 'd', 'e'].map((k, i) => [k, i]))
    const oldest = new OldestFirst(map)
    oldest.evict()
    expect(keysOf(map)).toEqual(['b', 'c', 'd', 'e'])
    map.delete('c')
    // Touched: deleted and set again, it is now the newest.
    map.delete('b')
    map.set('b', 1)
    oldest.evict()
    expect(keysOf(map)).toEqual(['e', 'b'])
    oldest.evict()
    expect(keysOf(map)).toEqual(['b'])
  })

  test('goes on with keys added after it reached the end, and after a clear', () => {
    const map = new Map([['a', 0]])
    const oldest = new OldestFirst(map)
    oldest.evict()
    oldest.evict() // empty: nothing to do, and the iterator is at its end
    expect(map.size).toBe(0)
    map.set('x', 1).set('y', 2)
    oldest.evict()
    expect(keysOf(map)).toEqual(['y'])
    map.clear()
    map.set('p', 1).set('q', 2)
    oldest.evict()
    expect(keysOf(map)).toEqual(['q'])
  })

  test('a bound held over many evictions keeps the newest keys', () => {
    const map = new Map<string, number>()
    const oldest = new OldestFirst(map)
    for (let i = 0; i < 50_000; i++) {
      if (map.size >= 1000) oldest.evict()
      map.set(`k${i}`, i)
      // Some keys touched (moved to the end) on the way.
      if (i % 10 === 0 && map.has(`k${i - 500}`)) {
        map.delete(`k${i - 500}`)
        map.set(`k${i - 500}`, i - 500)
      }
    }
    expect(map.size).toBe(1000)
    expect(map.has('k49999')).toBe(true)
    expect(map.has('k48000')).toBe(false)
  })
})
