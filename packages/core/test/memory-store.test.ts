import fc from 'fast-check'
import { spawnSync } from 'node:child_process'
import path from 'node:path'
import { ConfigError, createLimiter, MemoryStore, type MemoryStoreOptions } from '@sluice/core'

/** A fixed window of `limit` an hour on `store`, at a clock that stands still. */
function hourlyLimiter(store: MemoryStore, limit: number) {
  return createLimiter({ algorithm: 'fixed-window', limit, window: '1h', store, clock: () => 0 })
}

describe('MemoryStore', () => {
  test('bounded by maxKeys: the least recently used key goes first', async () => {
    const store = new MemoryStore({ maxKeys: 3 })
    const limiter = hourlyLimiter(store, 1)
    for (const key of ['a', 'b', 'c']) await limiter.consume(key)
    await limiter.consume('a') // touch: b is now the least recently used
    await limiter.consume('d')
    const id = limiter.policies[0].id
    expect(store.size(id)).toBe(3)
    expect((await limiter.consume('a')).allowed).toBe(false) // kept
    expect((await limiter.consume('c')).allowed).toBe(false) // kept
    expect((await limiter.consume('b')).allowed).toBe(true) // forgotten, so counted afresh
    await store.close()
  })

  test('under any churn of keys it remembers exactly the most recently used maxKeys', async () => {
    const churn = fc.array(
      fc.tuple(fc.integer({ min: 0, max: 11 }), fc.integer({ min: 1, max: 2 })),
      { minLength: 1, maxLength: 200 },
    )
    await fc.assert(
      fc.asyncProperty(churn, fc.integer({ min: 1, max: 6 }), async (requests, maxKeys) => {
        const store = new MemoryStore({ maxKeys })
        const limiter = hourlyLimiter(store, 3)
        // The model: counts in least-recently-used order; every request is a use, a rejected one too.
        const used = new Map<string, number>()
        for (const [n, cost] of requests) {
          const key = `key:${n}`
          const count = used.get(key) ?? 0
          const allowed = count + cost <= 3
          used.delete(key)
          used.set(key, allowed ? count + cost : count)
          if (used.size > maxKeys) used.delete(used.keys().next().value as string)
          const decision = await limiter.consume(key, { cost })
          expect([decision.allowed, decision.remaining]).toEqual([
            allowed,
            3 - (allowed ? count + cost : count),
          ])
          expect(store.size()).toBe(used.size)
        }
        await store.close()
      }),
      { numRuns: 200 },
    )
  })

  test('keys of every shape keep their own counts through churn (in the row, or listed beside)', async () => {
    // Up to 15 characters below U+0100 are held in the row; the rest are listed apart.
    const shapes = [
      '',
      '\u0000',
      'a',
      'a'.repeat(15),
      'a'.repeat(16),
      'ÿ'.repeat(15),
      '€',
      'x'.repeat(14) + '€',
      'user:' + '9'.repeat(40),
      'user:' + '9'.repeat(41),
      '\u0000\u0001b',
      'b',
    ]
    const churn = fc.array(fc.tuple(fc.integer({ min: 0, max: shapes.length - 1 }), fc.boolean()), {
      minLength: 1,
      maxLength: 150,
    })
    await fc.assert(
      fc.asyncProperty(churn, fc.integer({ min: 1, max: 8 }), async (requests, maxKeys) => {
        const store = new MemoryStore({ maxKeys })
        const limiter = hourlyLimiter(store, 1000)
        const used = new Map<string, number>()
        for (const [n, reset] of requests) {
          const key = shapes[n]
          if (reset) {
            await limiter.reset(key)
            used.delete(key)
            continue
          }
          const count = (used.get(key) ?? 0) + 1
          used.delete(key)
          used.set(key, count)
          if (used.size > maxKeys) used.delete(used.keys().next().value as string)
          // A copy of the key, so that no answer comes from the same string object.
          expect((await limiter.consume([key].join(''))).remaining).toBe(1000 - count)
          expect(store.size()).toBe(used.size)
        }
        await store.close()
      }),
      { numRuns: 200 },
    )
  })

  test('a key asked again and again is never answered from a row that no longer holds it', async () => {
    const store = new MemoryStore({ maxKeys: 1 })
    const limiter = hourlyLimiter(store, 3)
    const remaining = async (key: string) => (await limiter.consume(key)).remaining
    expect([await remaining('a'), await remaining('a')]).toEqual([2, 1])
    // b takes a's row (maxKeys 1): a must start afresh, not read b's count.
    expect(await remaining('b')).toBe(2)
    expect(await remaining('a')).toBe(2)
    expect(await remaining('a')).toBe(1)
    // Reset frees the row; the next key there must not be taken for a.
    await limiter.reset('a')
    expect(await remaining('c')).toBe(2)
    expect(await remaining('a')).toBe(2)
    // The same key in another string object is the same key.
    expect(await remaining(['a'].join(''))).toBe(1)
    await store.close()
  })

  test('a sliding-log with a large limit allocates rows as keys come, not a thousand at once', async () => {
    // 5,000,000 timestamps a key are 40 MB a row: a first allocation of 1024 rows (40 GB)
    // failed at the first request.
    const store = new MemoryStore()
    const limiter = createLimiter({
      algorithm: 'sliding-log',
      limit: 5_000_000,
      window: '1h',
      store,
      clock: () => 1000,
    })
    const first = await limiter.consume('a')
    expect(first).toMatchObject({ allowed: true, remaining: 4_999_999 })
    expect((await limiter.consume('b', { cost: 3 })).remaining).toBe(4_999_997)
    expect((await limiter.consume('a')).remaining).toBe(4_999_998)
    expect(store.size()).toBe(2)
    await store.close()
  })

  test('grows past its first allocation and keeps every key', async () => {
    const store = new MemoryStore({ maxKeys: 5000 })
    const limiter = createLimiter({
      algorithm: 'gcra',
      limit: 1,
      window: '1h',
      store,
      clock: () => 0,
    })
    for (let i = 0; i < 5000; i++) await limiter.consume(`k${i}`)
    for (let i = 0; i < 5000; i += 499) expect((await limiter.consume(`k${i}`)).allowed).toBe(false)
    expect(store.size()).toBe(5000)
    await store.close()
  })

  test('expired keys are reclaimed by the sweep and reads ignore them lazily', async () => {
    jest.useFakeTimers()
    try {
      const store = new MemoryStore({ sweepIntervalMs: 1000 })
      const clock = { now: 0 }
      const limiter = createLimiter({
        algorithm: 'token-bucket',
        limit: 1,
        window: 1000,
        store,
        clock: () => clock.now,
      })
      await limiter.consume('a')
      await limiter.consume('b')
      clock.now = 500
      await limiter.consume('c')
      clock.now = 1200 // a and b refilled at 1000; c at 1500
      await limiter.peek('x') // the store learns the time from calls
      await limiter.consume('d')
      jest.advanceTimersByTime(1000)
      expect(store.size()).toBe(2)
      await store.close()
    } finally {
      jest.useRealTimers()
    }
  })

  test('rows widen when a soft allowance needs more sliding-log slots', async () => {
    const store = new MemoryStore()
    const clock = { now: 0 }
    const hard = createLimiter({
      algorithm: 'sliding-log',
      limit: 2,
      window: 1000,
      store,
      clock: () => clock.now,
    })
    const soft = createLimiter({
      algorithm: 'sliding-log',
      limit: 2,
      window: 1000,
      store,
      clock: () => clock.now,
      throttle: { soft: 1 },
    })
    await hard.consume('k')
    clock.now = 10
    expect((await soft.consume('k')).allowed).toBe(true)
    expect((await soft.consume('k')).allowed).toBe(true)
    expect((await soft.consume('k')).allowed).toBe(true)
    expect((await soft.consume('k')).allowed).toBe(false)
    clock.now = 1000 // the entry at 0 has left the window
    expect((await soft.consume('k')).allowed).toBe(true)
    expect((await hard.consume('k')).allowed).toBe(false)
  })

  test('rows widen with their keys, in the row or listed', async () => {
    const store = new MemoryStore()
    const keys = ['k', 'a'.repeat(30), '€uro']
    const limiter = (soft: number) =>
      createLimiter({
        algorithm: 'sliding-log',
        limit: 2,
        window: 1000,
        store,
        clock: () => 0,
        ...(soft > 0 ? { throttle: { soft } } : {}),
      })
    const hard = limiter(0)
    for (const key of keys) await hard.consume(key)
    const soft = limiter(2)
    for (const key of keys) expect((await soft.peek(key)).remaining).toBe(1)
    for (const key of keys) await soft.consume(key)
    for (const key of keys) expect((await hard.peek(key)).remaining).toBe(0)
    expect(store.size()).toBe(3)
  })

  test('does not keep the process alive', () => {
    const root = path.resolve(__dirname, '../../..')
    const result = spawnSync(
      process.execPath,
      [
        '-r',
        'ts-node/register/transpile-only',
        '-e',
        "new (require('./packages/core/src/store/memory-store').MemoryStore)(); console.log('made')",
      ],
      { cwd: root, timeout: 15_000, encoding: 'utf8' },
    )
    expect(result.error).toBeUndefined()
    expect(result.stdout.trim()).toBe('made')
    expect(result.status).toBe(0)
  })

  test('rejects bad options', () => {
    expect(() => new MemoryStore({ maxKeys: 0 })).toThrow(
      /`maxKeys` must be a positive integer; got 0/,
    )
  })

  test('refuses an unknown option by name (a typo is not silently ignored)', () => {
    const maxkeys = 10
    expect(() => new MemoryStore({ maxkeys } as MemoryStoreOptions)).toThrow(ConfigError)
    expect(() => new MemoryStore({ maxkeys } as MemoryStoreOptions)).toThrow(
      /unknown option `maxkeys` for MemoryStore \(value 10\)/,
    )
    expect(() => new MemoryStore(null as unknown as MemoryStoreOptions)).toThrow(ConfigError)
  })
})

describe('maxBytes', () => {
  test('sliding-log with a large limit stays within maxBytes: the least recently used keys go', async () => {
    const store = new MemoryStore({ maxBytes: 1_000_000 })
    const limiter = createLimiter({
      algorithm: 'sliding-log',
      limit: 1000,
      window: '1h',
      store,
      clock: () => 0,
    })
    for (let i = 0; i < 2000; i++) await limiter.consume(`k${i}`)
    // A row holds 1000 timestamps and its bookkeeping: about 8 kB, so about 120 keys fit.
    expect(store.stateBytes()).toBeLessThanOrEqual(1_000_000)
    expect(store.size()).toBeGreaterThan(100)
    expect(store.size()).toBeLessThan(125)
    // The newest keys are kept, with their counts; the oldest were forgotten.
    expect((await limiter.peek('k1999')).remaining).toBe(999)
    expect((await limiter.peek('k0')).remaining).toBe(1000)
    await store.close()
  })

  test('holds at every moment while the store grows, peak included (ArrayBuffer bytes measured)', () => {
    const maxBytes = 16 * 2 ** 20
    const store = new MemoryStore({ maxBytes })
    const limiter = createLimiter({
      algorithm: 'sliding-log',
      limit: 1000,
      window: '1h',
      store,
      clock: () => 0,
    })
    const before = process.memoryUsage().arrayBuffers
    let peak = 0
    // About 2,000 rows of 8 kB fit; 4,000 keys make the store grow to the budget, then evict.
    for (let i = 0; i < 4000; i++) {
      void limiter.consume(`k${i}`)
      peak = Math.max(peak, process.memoryUsage().arrayBuffers - before)
      expect(store.stateBytes()).toBeLessThanOrEqual(maxBytes)
    }
    // The state rows, and the key index's slots (1 MB at most here) beside them: never the old
    // buffer and its copy at once.
    expect(peak).toBeGreaterThan(maxBytes * 0.9)
    expect(peak).toBeLessThanOrEqual(maxBytes + 2 ** 20)
    expect(store.size()).toBeGreaterThan(1900)
  })

  test('is shared by every limit of the store, and checked', async () => {
    const store = new MemoryStore({ maxBytes: 600_000 })
    const logs = createLimiter({ algorithm: 'sliding-log', limit: 500, window: '1h', store })
    const windows = createLimiter({ algorithm: 'fixed-window', limit: 5, window: '1h', store })
    for (let i = 0; i < 500; i++) {
      await logs.consume(`a${i}`)
      await windows.consume(`b${i}`)
    }
    expect(store.stateBytes()).toBeLessThanOrEqual(600_000)
    expect(() => new MemoryStore({ maxBytes: 0 })).toThrow(/`maxBytes` must be a positive integer/)
    await store.close()
  })

  test('keys in turn, one an escaped spelling of the other, keep their own state on the hot path', async () => {
    // 'a\0b' is stored as 'a\0\1b', and 'a\0\1b' as 'a\0\1\1b': the stored key of the last
    // key is remembered (by the limiter and by the store), and must follow every change of key.
    const twins = ['a\u0000b', 'a\u0000\u0001b']
    for (const prefix of ['', 'p']) {
      const store = new MemoryStore()
      const limiter = createLimiter({ algorithm: 'gcra', limit: 1, window: '1h', store, prefix })
      const seen = []
      for (const key of [...twins, ...twins, 'other', ...twins]) {
        seen.push((await limiter.consume(key)).allowed)
      }
      expect(seen).toEqual([true, true, false, false, true, false, false])
      expect(store.size()).toBe(3)
      await store.close()
    }
  })
})
