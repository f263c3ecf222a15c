import {
  ConfigError,
  type Limiter,
  type LimiterOptions,
  type LocalTier,
  type LocalTierOptions,
  createLimiter,
  localTier,
  MemoryStore,
  type Policy,
  type Store,
  type StoreBlock,
  type StoreRefund,
  type StoreRequest,
  type StoreResult,
} from '../src'

/**
 * The shared store of these tests: a real MemoryStore behind the asynchronous Store methods
 * only (as a network store offers them), counting the calls the tier makes and able to fail
 * on demand, as a store that went away.
 */
class SharedStore implements Store {
  readonly memory = new MemoryStore()
  consumes = 0
  refunds = 0
  down = false

  get calls(): number {
    return this.consumes + this.refunds
  }
  /** A call as a network store answers: later, or with a failure while the store is down. */
  private later<T>(answer: () => Promise<T>): Promise<T> {
    return Promise.resolve().then(() => {
      if (this.down) throw new Error('connection refused')
      return answer()
    })
  }
  consume(request: StoreRequest): Promise<StoreResult> {
    this.consumes++
    return this.later(() => this.memory.consume(request))
  }
  peek(request: StoreRequest): Promise<StoreResult> {
    return this.memory.peek(request)
  }
  refund(request: StoreRefund): Promise<void> {
    this.refunds++
    return this.later(() => this.memory.refund(request))
  }
  penalize(request: StoreRequest): Promise<void> {
    return this.memory.penalize(request)
  }
  block(request: StoreBlock): Promise<void> {
    return this.memory.block(request)
  }
  reset(key: string, policies: readonly Policy[]): Promise<void> {
    return this.memory.reset(key, policies)
  }
  close(): Promise<void> {
    return this.memory.close()
  }
}

let time = 0
const clock = (): number => time
const shared: SharedStore[] = []
function sharedStore(): SharedStore {
  const store = new SharedStore()
  shared.push(store)
  return store
}
/**
 * A limiter at `start` on a tier over a fresh shared store. The tests that count store calls
 * exactly give leases a lifetime far longer than the test runs: the tier's sweep reads real
 * time as well as the requests' clock, and must not end a lease early on a busy machine.
 */
function tierAt(
  start: number,
  options: LocalTierOptions,
  limits: Omit<LimiterOptions, 'store' | 'clock'>,
): { store: SharedStore; tier: LocalTier; limiter: Limiter } {
  time = start
  const store = sharedStore()
  const tier = localTier(store, options)
  return { store, tier, limiter: createLimiter({ ...limits, clock, store: tier }) }
}

afterEach(async () => {
  for (const store of shared.splice(0)) await store.close()
})

/** What the shared store has left for the key (a peek of cost 0). */
async function sharedRemaining(store: SharedStore, limiter: { policies: readonly Policy[] }) {
  const { outcomes } = await store.memory.peek({
    key: 'k',
    policies: limiter.policies,
    cost: 0,
    now: time,
  })
  return outcomes[0].remaining
}

describe('options', () => {
  test.each([
    [
      { maxShare: 0 },
      '`maxShare` must be a number in (0, 1]: a lease may not exceed the limit; got 0',
    ],
    [
      { maxShare: 1.5 },
      '`maxShare` must be a number in (0, 1]: a lease may not exceed the limit; got 1.5',
    ],
    [
      { maxShare: '5%' },
      '`maxShare` must be a number in (0, 1]: a lease may not exceed the limit; got "5%"',
    ],
    [{ leaseMs: 0 }, '`leaseMs` must be a positive integer number of ms; got 0'],
    [{ leaseMs: 2.5 }, '`leaseMs` must be a positive integer number of ms; got 2.5'],
  ])('%j is refused at creation', (options, message) => {
    const store = sharedStore()
    expect(() => localTier(store, options as never)).toThrow(ConfigError)
    expect(() => localTier(store, options as never)).toThrow(message)
  })

  test('a store that is not one is refused', () => {
    expect(() => localTier({} as Store)).toThrow(ConfigError)
  })

  test('a lease longer than a window is refused when the limiter is created', async () => {
    const tier = localTier(sharedStore(), { leaseMs: 2000 })
    expect(() => createLimiter({ store: tier, limit: 10, window: '1s', clock })).toThrow(
      '`leaseMs` must not exceed the window of policy 10-per-1s (1000 ms): a lease must end within its window; got 2000',
    )
    expect(() => createLimiter({ store: tier, limit: 10, window: '2s', clock })).not.toThrow()
    await tier.close()
  })
})

describe('a hot key under its limit', () => {
  test('costs at most 0.05 shared calls per decision, close() included, and loses no count', async () => {
    // L = 2% of 10 000 = 200
    const { store, tier, limiter } = tierAt(
      1_000_000,
      { leaseMs: 50_000 },
      { limit: 10_000, window: '1m' },
    )
    let admitted = 0
    for (let i = 0; i < 2000; i++) {
      if (i % 100 === 0) time += 10
      if ((await limiter.consume('k')).allowed) admitted++
    }
    expect(tier.stats()).toEqual({
      heldUnits: 55,
      storeConsumes: 17,
      storeRefunds: 0,
      leasedDecisions: 2000 - 17,
    })
    await tier.close()
    expect(tier.stats().heldUnits).toBe(0)
    expect(admitted).toBe(2000)
    // Leases of 1, 2, 4, ..., 128 (255 units), then 9 of 200: the last one's 55 unspent refunded.
    expect(store.consumes).toBe(17)
    expect(store.refunds).toBe(1)
    expect(store.calls / 2000).toBeLessThanOrEqual(0.05)
    expect(await sharedRemaining(store, limiter)).toBe(10_000 - 2000)
  })

  test('a decision from the lease tells what the store had left plus what the lease holds', async () => {
    const { store, tier, limiter } = tierAt(
      2_000_000,
      { maxShare: 0.1 },
      { limit: 100, window: '1m' },
    )
    const decisions = []
    for (let i = 0; i < 8; i++) {
      decisions.push(await limiter.consume('k'))
      time += 1000
    }
    // Alone, the process sees the exact count: 100 - n after n requests.
    expect(decisions.map((d) => d.remaining)).toEqual([99, 98, 97, 96, 95, 94, 93, 92])
    // The reset the store gave each lease, counted down: its bucket (33, of 60 000 ms) ends
    // at 2 040 000, when the requests begin to fade, whichever lease they came from.
    expect(decisions.map((d) => d.resetMs)).toEqual(
      [0, 1, 2, 3, 4, 5, 6, 7].map((i) => 40_000 - 1000 * i),
    )
    await tier.close()
    expect(await sharedRemaining(store, limiter)).toBe(92)
  })
})

describe('lease lifetimes', () => {
  test('a fixed-window lease ends with its window: the next window asks the store again', async () => {
    // 3 000 000: a window start (windows of 60 000)
    const { store, tier, limiter } = tierAt(
      3_000_000,
      { maxShare: 0.5, leaseMs: 50_000 },
      { algorithm: 'fixed-window', limit: 10, window: '1m' },
    )
    time += 59_990
    for (let i = 0; i < 3; i++) await limiter.consume('k') // leases of 1 and 2
    expect(store.consumes).toBe(2)
    time += 10 // the next window: the lease of 2 (one spent) cannot be spent here
    const d = await limiter.consume('k')
    expect(d.allowed).toBe(true)
    expect(store.consumes).toBe(3)
    await tier.close()
    // The unspent unit went back into the old window; the new one holds the new lease.
    // The lease of 2 had spent 1: the unit went back to the old window, and the new window's
    // lease is of 1 (what the expired one spent).
    expect(d.remaining).toBe(9)
    expect(await sharedRemaining(store, limiter)).toBe(9)
  })

  test('a sliding-window lease ends with its bucket', async () => {
    // 4 000 000: a bucket start (buckets of 10 000)
    const { store, tier, limiter } = tierAt(
      4_000_000,
      { maxShare: 0.5, leaseMs: 50_000 },
      { algorithm: 'sliding-window', precision: 6, limit: 60, window: '1m' },
    )
    await limiter.consume('k')
    await limiter.consume('k') // lease of 2, one left
    time += 9_999
    await limiter.consume('k') // still the bucket: from the lease
    expect(store.consumes).toBe(2)
    await limiter.consume('k') // lease of 4
    time += 1 // the next bucket
    await limiter.consume('k')
    expect(store.consumes).toBe(4)
    await tier.close()
  })

  test('an expired lease is refunded as taken when it was, and the next is what it spent', async () => {
    const { store, tier, limiter } = tierAt(
      5_000_000,
      { maxShare: 0.1, leaseMs: 30_000 },
      { algorithm: 'sliding-log', limit: 100, window: '1m' },
    )
    for (let i = 0; i < 4; i++) await limiter.consume('k') // leases of 1 and 2, then of 4 (3 left)
    expect(store.consumes).toBe(3)
    time += 30_000
    await limiter.consume('k') // expired: 3 refunded, a lease of 4 - 3 = 1
    expect(store.consumes).toBe(4)
    expect(store.refunds).toBe(1)
    expect(await sharedRemaining(store, limiter)).toBe(95)
    await tier.close()
    expect(await sharedRemaining(store, limiter)).toBe(95)
  })
})

describe('what is not leased goes to the store as it is', () => {
  test('leaky-bucket: one call per decision', async () => {
    const store = sharedStore()
    const tier = localTier(store)
    const limiter = createLimiter({
      algorithm: 'leaky-bucket',
      limit: 1000,
      window: '1s',
      clock,
      store: tier,
    })
    for (let i = 0; i < 10; i++) await limiter.consume('k')
    expect(store.consumes).toBe(10)
    await tier.close()
  })

  test('a cost above the largest lease: one call, exact', async () => {
    // L = 2 of 100
    const { store, tier, limiter } = tierAt(6_000_000, {}, { limit: 100, window: '1m' })
    const d = await limiter.consume('k', { cost: 30 })
    expect(d.remaining).toBe(70)
    expect(store.consumes).toBe(1)
    await tier.close()
    expect(store.refunds).toBe(0)
  })
})

describe('several processes on one key', () => {
  test.each(['fixed-window', 'sliding-window', 'sliding-log', 'token-bucket', 'gcra'] as const)(
    '%s: never more than the limit, never fewer than limit - N x L',
    async (algorithm) => {
      time = 7_000_000
      const store = sharedStore()
      const n = 4
      const tiers = Array.from({ length: n }, () => localTier(store, { maxShare: 0.05 }))
      // L = 5 of 200
      const limiters = tiers.map((tier) =>
        createLimiter({ algorithm, limit: 200, window: '1h', clock, store: tier }),
      )
      let admitted = 0
      for (let round = 0; round < 100; round++) {
        const decisions = await Promise.all(limiters.map((limiter) => limiter.consume('k')))
        for (const d of decisions) if (d.allowed) admitted++
      }
      expect(admitted).toBeLessThanOrEqual(200)
      expect(admitted).toBeGreaterThanOrEqual(200 - n * 5)
      for (const tier of tiers) await tier.close()
      expect(await sharedRemaining(store, limiters[0] as never)).toBe(200 - admitted)
    },
  )
})

describe('a shared store that fails', () => {
  test('the tier answers from its lease, then onStoreError; nothing is charged twice', async () => {
    // L = 10
    const { store, tier, limiter } = tierAt(
      8_000_000,
      { maxShare: 0.1, leaseMs: 60_000 },
      { limit: 100, window: '1h', onStoreError: 'allow' },
    )
    for (let i = 0; i < 7; i++) await limiter.consume('k') // leases of 1, 2, 4: all spent
    await limiter.consume('k') // a lease of 8, 7 left
    expect(await sharedRemaining(store, limiter)).toBe(100 - 15)
    store.down = true
    const during = []
    for (let i = 0; i < 9; i++) during.push(await limiter.consume('k'))
    expect(during.map((d) => d.degraded)).toEqual([
      false,
      false,
      false,
      false,
      false,
      false,
      false,
      true,
      true,
    ])
    expect(during.map((d) => d.allowed)).toEqual(Array(9).fill(true))
    store.down = false
    const after = await limiter.consume('k')
    expect(after.degraded).toBe(false)
    await tier.close()
    // 15 leased, then one more request: the degraded ones were never sent.
    expect(await sharedRemaining(store, limiter)).toBe(100 - 16)
  })
})

test('a refund of a request answered from the lease goes back to the lease', async () => {
  const { store, tier, limiter } = tierAt(
    9_000_000,
    { maxShare: 0.1, leaseMs: 60_000 },
    { limit: 100, window: '1h' },
  )
  for (let i = 0; i < 3; i++) await limiter.consume('k') // leases of 1 and 2
  await limiter.consume('k') // lease of 4 at 9 000 000, 3 left
  time += 5
  await limiter.consume('k')
  const refunds = store.refunds
  await limiter.refund('k', { at: time })
  expect(store.refunds).toBe(refunds)
  expect((await limiter.consume('k')).remaining).toBe(100 - 5)
  await tier.close()
  expect(await sharedRemaining(store, limiter)).toBe(100 - 5)
})

test('reset forgets the leases with the store; close() lets later calls through', async () => {
  const { store, tier, limiter } = tierAt(
    10_000_000,
    { maxShare: 0.1, leaseMs: 60_000 },
    { limit: 100, window: '1h' },
  )
  for (let i = 0; i < 4; i++) await limiter.consume('k')
  await limiter.reset('k')
  expect((await limiter.consume('k')).remaining).toBe(99)
  await tier.close()
  const consumes = store.consumes
  await limiter.consume('k')
  expect(store.consumes).toBe(consumes + 1)
  expect(await sharedRemaining(store, limiter)).toBe(98)
})

test('close() while requests wait for a lease: they go to the store, and no lease outlives it', async () => {
  const { store, tier, limiter } = tierAt(
    11_000_000,
    { maxShare: 0.1, leaseMs: 60_000 },
    { limit: 100, window: '1h' },
  )
  const waiting = Array.from({ length: 5 }, () => limiter.consume('k')) // one lease of 1 asked, 4 wait
  const closed = tier.close()
  const decisions = await Promise.all(waiting)
  await closed
  expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, true, true])
  expect(tier.stats().heldUnits).toBe(0)
  expect(store.consumes).toBe(5)
  expect(await sharedRemaining(store, limiter)).toBe(95)
})

test('on a store with its own clock, a refund is dated within the window the lease was counted in', async () => {
  const end = 12_000_000 // a window's end (windows of 60 000)
  time = end - 5
  const store = sharedStore()
  const dates: (number | undefined)[] = []
  const refund = store.refund.bind(store)
  Object.assign(store, {
    ownClock: true,
    refund: (request: StoreRefund) => (dates.push(request.at), refund(request)),
  })
  const tier = localTier(store, { maxShare: 0.5 })
  expect(tier.ownClock).toBe(true)
  const limiter = createLimiter({
    algorithm: 'fixed-window',
    limit: 10,
    window: '1m',
    clock,
    store: tier,
  })
  await limiter.consume('k') // a lease of 1
  time = end - 2
  const b = limiter.consume('k') // a lease of 2 asked at end - 2, one unit left
  time = end + 5
  const c = limiter.consume('k') // waits for it, in the next window
  await Promise.all([b, c])
  await tier.close()
  // The store counted B's lease somewhere between end - 2 and its answer, after end + 5 here:
  // its unspent unit is refunded as counted just before the window's end, not after it.
  expect(dates).toEqual([end - 1])
  expect(await sharedRemaining(store, limiter)).toBe(9)
})

test('block ends the leases and refunds them: the block holds at once in this process', async () => {
  const { store, tier, limiter } = tierAt(
    13_000_000,
    { maxShare: 0.1, leaseMs: 60_000 },
    { limit: 100, window: '1h' },
  )
  for (let i = 0; i < 4; i++) await limiter.consume('k') // leases of 1 and 2, then of 4 (3 left)
  await limiter.block('k', 1000)
  const blocked = await limiter.consume('k')
  expect([blocked.allowed, blocked.retryAfterMs]).toEqual([false, 1000])
  time += 1000
  expect(await sharedRemaining(store, limiter)).toBe(96)
  expect((await limiter.consume('k')).allowed).toBe(true)
  await tier.close()
  expect(await sharedRemaining(store, limiter)).toBe(95)
})

test.each([
  [1, 1],
  [2, 3],
  [4, 4],
  [20, 6],
])('a key decided %i times costs %i store calls, close() included', async (decisions, calls) => {
  const { store, tier, limiter } = tierAt(
    14_000_000,
    { leaseMs: 60_000 },
    { limit: 10_000, window: '1h' },
  )
  for (let i = 0; i < decisions; i++) await limiter.consume('k')
  await tier.close()
  expect(store.calls).toBe(calls)
  expect(await sharedRemaining(store, limiter)).toBe(10_000 - decisions)
})

test('a key below L per leaseMs: about 2 / (r x leaseMs) calls per decision', async () => {
  // r = 1 per 20 ms, leaseMs 1000: r x leaseMs = 50, under L = 2000.
  const { store, tier, limiter } = tierAt(15_000_000, {}, { limit: 100_000, window: '1h' })
  const decisions = 1000
  for (let i = 0; i < decisions; i++) {
    await limiter.consume('k')
    time += 20
  }
  await tier.close()
  // The ramp to 50 (leases of 1 to 32), then at most a lease and a refund per lifetime.
  const stated = leasesToReach(50) + (2 * decisions) / 50 + 1
  expect(store.calls).toBeLessThanOrEqual(stated)
  expect(await sharedRemaining(store, limiter)).toBe(100_000 - decisions)
})

/** Leases of 1, 2, 4, ... until one holds at least `size`. */
function leasesToReach(size: number): number {
  let leases = 1
  for (let lease = 1; lease < size; lease *= 2) leases++
  return leases
}
