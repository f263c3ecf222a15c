// The shared adapter compat entries run a peer library's increment-style store through: counts,
// refunds, resets and reads map onto the peer store's own methods, and what a store has no
// method for is refused by name (ERR_SLUICE_UNSUPPORTED), never skipped.
import { ConfigError, createLimiter, type Limiter } from '@sluice/core'
import { IncrementStoreAdapter, type IncrementStore } from '@sluice/http'

/** A peer store as express-rate-limit's MemoryStore counts: a fixed window from a key's first hit. */
class WindowCounts {
  readonly hits = new Map<string, { count: number; endsAt: number }>()
  constructor(private readonly clock: () => number) {}

  count(key: string, windowMs: number): { hits: number; resetMs: number } {
    const now = this.clock()
    let entry = this.hits.get(key)
    if (entry === undefined || entry.endsAt <= now) {
      entry = { count: 0, endsAt: now + windowMs }
      this.hits.set(key, entry)
    }
    entry.count++
    return { hits: entry.count, resetMs: entry.endsAt - now }
  }
}

function peerStore(counts: WindowCounts, methods: Partial<IncrementStore> = {}): IncrementStore {
  return {
    description: 'a test peer store',
    increment: async (key, policy) => counts.count(key, policy.windowMs),
    ...methods,
  }
}

function fullPeerStore(counts: WindowCounts): IncrementStore {
  return peerStore(counts, {
    read: async (key) => {
      const entry = counts.hits.get(key)
      return entry && { hits: entry.count, resetMs: undefined }
    },
    decrement: async (key) => {
      const entry = counts.hits.get(key)
      if (entry !== undefined) entry.count = Math.max(0, entry.count - 1)
    },
    resetKey: async (key) => void counts.hits.delete(key),
  })
}

let now = 1_000_000
const clock = () => now

function limiterOn(store: IncrementStoreAdapter, limit = 2): Limiter {
  return createLimiter({
    algorithm: 'fixed-window',
    limit,
    window: 60_000,
    store,
    clock,
    breaker: false,
    logger: { warn: () => undefined },
  })
}

test("consume is the peer store's count: admitted while within the limit, its window's end as reset", async () => {
  const counts = new WindowCounts(clock)
  const limiter = limiterOn(new IncrementStoreAdapter(fullPeerStore(counts)))
  expect(await limiter.consume('a')).toMatchObject({ allowed: true, remaining: 1, resetMs: 60_000 })
  now += 10_000
  expect(await limiter.consume('a')).toMatchObject({ allowed: true, remaining: 0, resetMs: 50_000 })
  expect(await limiter.consume('a')).toMatchObject({
    allowed: false,
    remaining: 0,
    retryAfterMs: 50_000,
  })
  // The peer counts rejected hits too, as its library does.
  expect(counts.hits.get('a')!.count).toBe(3)
})

test("refund, reset and peek map onto the peer store's decrement, resetKey and read", async () => {
  const counts = new WindowCounts(clock)
  const limiter = limiterOn(new IncrementStoreAdapter(fullPeerStore(counts)), 5)
  await limiter.consume('k')
  await limiter.consume('k')
  await limiter.reward('k')
  expect(counts.hits.get('k')!.count).toBe(1)
  expect(await limiter.peek('k')).toMatchObject({ remaining: 4 })
  await limiter.reset('k')
  expect(counts.hits.has('k')).toBe(false)
  expect(await limiter.peek('k')).toMatchObject({ remaining: 5 })
})

test('a refund into a window that is over takes nothing back', async () => {
  const counts = new WindowCounts(clock)
  const adapter = new IncrementStoreAdapter(fullPeerStore(counts))
  const policies = limiterOn(adapter).policies
  const at = now
  await adapter.consume({ key: 'k', policies, cost: 1, now })
  await adapter.refund({ key: 'k', policies, cost: 1, now: at + 60_000, at })
  expect(counts.hits.get('k')!.count).toBe(1)
  await adapter.refund({ key: 'k', policies, cost: 1, now: at + 59_999, at })
  expect(counts.hits.get('k')!.count).toBe(0)
})

test('what the peer store has no method for is refused with its name, and nothing changes', async () => {
  const counts = new WindowCounts(clock)
  const limiter = limiterOn(new IncrementStoreAdapter(peerStore(counts)))
  await limiter.consume('k')
  // The limiter reports a failed store call as a StoreError whose cause is the store's error.
  const refused = (what: string) => ({
    cause: expect.objectContaining({
      code: 'ERR_SLUICE_UNSUPPORTED',
      message: `a test peer store cannot ${what}`,
    }),
  })
  await expect(limiter.reward('k')).rejects.toMatchObject(refused('give a hit back'))
  await expect(limiter.reset('k')).rejects.toMatchObject(refused('reset a key'))
  await expect(limiter.peek('k')).rejects.toMatchObject(refused('read a key without counting it'))
  await expect(limiter.block('k', 1000)).rejects.toMatchObject(refused('block a key'))
  expect(counts.hits.get('k')!.count).toBe(1)
})

test('a peer store counts fixed windows: another algorithm is a ConfigError', () => {
  const store = new IncrementStoreAdapter(peerStore(new WindowCounts(clock)))
  expect(() => createLimiter({ algorithm: 'gcra', limit: 1, window: 1000, store })).toThrow(
    ConfigError,
  )
})
