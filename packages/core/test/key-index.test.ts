import fc from 'fast-check'
import { ABSENT, hashKey, KeyIndex, type KeyHash, type RowKeys } from '../src/store/key-index'

const ROWS = 6000

type Operation = { add: string } | { remove: string } | { find: string }

/** Rows' keys as a table holds them: written before the index learns them, cleared after. */
class KeyList implements RowKeys {
  readonly keys: string[] = []
  holds(row: number, key: string): boolean {
    return this.keys[row] === key
  }
  keyAt(row: number): string {
    return this.keys[row]
  }
  hashAt(row: number, hash: KeyHash, seed: number): number {
    return hash(this.keys[row], seed)
  }
}

/**
 * Runs the operations on a KeyIndex and on a Map side by side: every find must agree, and so
 * must the size. Rows come from a pool, as a table hands them out and takes them back.
 */
function checkAgainstMap(hash: KeyHash, operations: readonly Operation[], maxRows = ROWS): void {
  const rows = new KeyList()
  const index = new KeyIndex(rows, maxRows, hash)
  const expected = new Map<string, number>()
  const free = Array.from({ length: ROWS }, (_, row) => ROWS - 1 - row)
  for (const operation of operations) {
    if ('add' in operation) {
      if (expected.has(operation.add)) continue
      const row = free.pop() as number
      expect(index.find(operation.add)).toBe(ABSENT)
      rows.keys[row] = operation.add
      index.add(operation.add, row)
      expected.set(operation.add, row)
    } else if ('remove' in operation) {
      const row = expected.get(operation.remove)
      if (row === undefined) continue
      index.remove(row)
      rows.keys[row] = ''
      expected.delete(operation.remove)
      free.push(row)
    } else {
      expect(index.find(operation.find)).toBe(expected.get(operation.find) ?? ABSENT)
    }
    expect(index.size).toBe(expected.size)
  }
  for (const [key, row] of expected) expect(index.find(key)).toBe(row)
}

function operations(keys: fc.Arbitrary<string>, maxLength: number): fc.Arbitrary<Operation[]> {
  return fc.array(
    fc.oneof(
      { weight: 3, arbitrary: keys.map((add) => ({ add })) },
      { weight: 2, arbitrary: keys.map((remove) => ({ remove })) },
      { weight: 2, arbitrary: keys.map((find) => ({ find })) },
    ),
    { maxLength },
  )
}

const fewKeys = fc.integer({ min: 0, max: 60 }).map((n) => `k${n}`)

describe('KeyIndex', () => {
  test('agrees with a Map under any sequence of adds, removes and finds', () => {
    fc.assert(fc.property(operations(fewKeys, 300), (ops) => checkAgainstMap(hashKey, ops)))
  })

  test('agrees with a Map when every key has the same hash (one long run, then the overflow map)', () => {
    fc.assert(
      fc.property(operations(fewKeys, 300), (ops) => checkAgainstMap(() => 7, ops)),
      { numRuns: 100 },
    )
  })

  test('agrees with a Map when hashes crowd a few neighbouring slots (removals close gaps)', () => {
    const crowded: KeyHash = (key) => key.length * 3 + (key.charCodeAt(key.length - 1) % 4)
    fc.assert(
      fc.property(operations(fewKeys, 300), (ops) => checkAgainstMap(crowded, ops)),
      { numRuns: 200 },
    )
  })

  test('holds thousands of keys through its resizes, and through removals after them', () => {
    const keys = Array.from({ length: 5000 }, (_, n) => `user:${n}`)
    const ops: Operation[] = [
      ...keys.map((add) => ({ add })),
      ...keys.filter((_, n) => n % 3 === 0).map((remove) => ({ remove })),
      ...keys.map((find) => ({ find })),
    ]
    checkAgainstMap(hashKey, ops)
    // A hash with few values: most keys overflow, then find a slot when the index resizes.
    checkAgainstMap((key) => key.length, ops)
  })

  test('a slot keeps its row whatever room the row number leaves for the tag', () => {
    const ops = Array.from({ length: 1500 }, (_, n) => ({ add: `k${n}` }))
    const all: Operation[] = [...ops, ...ops.map(({ add }) => ({ find: add }))]
    for (const maxRows of [ROWS, 2 ** 16, 2 ** 30, 2 ** 31, 2 ** 40]) {
      checkAgainstMap(hashKey, all, maxRows)
    }
  })

  test('the seeded hash spreads similar keys over the slots', () => {
    const slots = 1 << 12
    const used = new Set<number>()
    for (let n = 0; n < slots / 2; n++)
      used.add(hashKey(`10.0.${n >> 8}.${n & 255}`, 12345) & (slots - 1))
    // Random placement would fill about 1 - e^-0.5 of the draws' distinct slots: ~79% of 2048.
    expect(used.size).toBeGreaterThan((slots / 2) * 0.75)
    expect(hashKey('a', 1)).not.toBe(hashKey('a', 2))
  })
})
