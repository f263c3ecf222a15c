import { createLimiter, ConfigError, MemoryStore } from '@sluice/core'
import { RedisStore } from '@sluice/redis'
import { useRedisServer } from './fixtures/redis-server'

// The packed layout (RedisStoreOptions.packed): the hashes it keeps, the sweep that bounds
// them, and compare-and-set between processes. The conformance suite checks every decision.

const redis = useRedisServer({ maxRetriesPerRequest: 1 })
const connect = redis.connect

beforeEach(() => redis.admin.flushall())

const scriptCalls = redis.scriptCalls

test('every limit of a client key is a field of its group hash, which lives as long as its longest field', async () => {
  let now = 1_764_000_000_000
  const store = new RedisStore({ client: connect(), time: 'client', packed: { groups: 1 } })
  const limiter = createLimiter({
    store,
    limits: [
      { limit: 5, window: '1m', algorithm: 'fixed-window', anchor: 'first-request' },
      { limit: 100, window: '1h', algorithm: 'gcra' },
    ],
    clock: () => now,
  })
  await limiter.consume('alice')
  await limiter.consume('bob')
  // The seed of the group hash, which every process of the store shares (see group-hash.ts).
  expect((await redis.admin.keys('*')).sort()).toEqual(['sluice:seed', 'sluice:{%g0}:s'])
  const states = await redis.admin.hgetall('sluice:{%g0}:s')
  expect(Object.keys(states).sort()).toEqual([
    'g100/1h:alice',
    'g100/1h:bob',
    'k5/1m:alice',
    'k5/1m:bob',
  ])
  // `<expires at>;<state>`: the window's end plus the clock tolerance (1000 ms by default).
  expect(states['k5/1m:alice']).toBe(`${now + 60_000 + 1000};${now},1`)
  // The hash lives as long as its longest-lived field: the fixed window's, 61 s (gcra's: 36 s).
  expect(await redis.admin.pttl('sluice:{%g0}:s')).toBeGreaterThan(60_000 + 1000 - 500)
  expect(await redis.admin.object('ENCODING', 'sluice:{%g0}:s')).toBe('listpack')
  now += 61_000 + 1000
  // Expired fields read as empty: alice starts a new window.
  expect((await limiter.consume('alice')).policies[0].remaining).toBe(4)
})

test.each([32, 1])(
  "a decision reads a client key's several limits with one HMGET and writes them with one HSET (batchSize %d)",
  async (batchSize) => {
    let now = 1_764_000_000_000
    const store = new RedisStore({
      client: connect(),
      time: 'client',
      batchSize,
      packed: { groups: 1 },
    })
    const limiter = createLimiter({
      store,
      limits: [
        { limit: 100, window: '1h', algorithm: 'gcra' },
        { limit: 50, window: '1m', algorithm: 'sliding-window', precision: 4 },
        { limit: 10, window: '1m', algorithm: 'fixed-window' },
      ],
      clock: () => now,
    })
    const both = () => Promise.all([limiter.consume('alice'), limiter.consume('bob')])
    await both()
    now += 1000
    await redis.admin.config('RESETSTAT')
    const decisions = await both()
    for (const decision of decisions) {
      expect(decision.policies.map((p) => p.remaining)).toEqual([98, 48, 8])
    }
    // Batched, both decisions are one script call; alone, one each.
    expect(await redis.scriptCalls()).toBe(batchSize === 1 ? 2 : 1)
    const calls = await redis.commandCalls()
    // Per decision: the three states at once, written at once, and the hash's TTL looked at
    // once; alone, the block's field (its own hash) first too, which a batch reads only while
    // `sluice:blocks` says some key may be blocked.
    const blockReads = batchSize === 1 ? 2 : 0
    expect([calls.hget ?? 0, calls.hmget, calls.hset, calls.pttl]).toEqual([blockReads, 2, 2, 2])
    expect(Object.keys(await redis.admin.hgetall('sluice:{%g0}:s')).sort()).toEqual([
      'f10/1m:alice',
      'f10/1m:bob',
      'g100/1h:alice',
      'g100/1h:bob',
      'w50/1mp4:alice',
      'w50/1mp4:bob',
    ])
  },
)

test('expired fields are swept: a hash holds at most about twice its live fields', async () => {
  let now = 1_764_000_000_000
  const store = new RedisStore({
    client: connect(),
    time: 'client',
    clockToleranceMs: 0,
    packed: { groups: 1 },
  })
  const limiter = createLimiter({
    store,
    algorithm: 'gcra',
    limit: 1,
    window: '1s',
    clock: () => now,
  })
  const hash = 'sluice:{%g0}:s'
  let admitted = 0
  for (let wave = 0; wave < 6; wave++) {
    // 300 new client keys a wave; the last wave's have expired when the next comes.
    for (let i = 0; i < 300; i++) {
      if ((await limiter.consume(`w${wave}-${i}`)).allowed) admitted++
    }
    now += 2000
    // 300 live fields and the sweep's mark: never more than twice the live ones, plus it.
    expect(await redis.admin.hlen(hash)).toBeLessThanOrEqual(2 * 300 + 1)
  }
  expect(admitted).toBe(6 * 300)
  // Within one wave nothing is swept that still counts: each key is refused a second time.
  for (let i = 0; i < 300; i++) expect((await limiter.consume(`w6-${i}`)).allowed).toBe(true)
  for (let i = 0; i < 300; i++) expect((await limiter.consume(`w6-${i}`)).allowed).toBe(false)
})

// token-bucket, sliding-window: Lua decides (lua/packed.ts); sliding-log: compare-and-set (cas/).
type Limits = Parameters<typeof createLimiter>[0]['limits']

// One limit: Lua decides (lua/packed.ts); a sliding window beside another limit: compare-and-set
// (cas/runner.ts).
test.each([
  ['token-bucket', [{ algorithm: 'token-bucket', limit: 200, window: '1h' }]],
  ['sliding-window', [{ algorithm: 'sliding-window', limit: 200, window: '1h' }]],
  [
    'gcra and sliding-window',
    [
      { algorithm: 'gcra', limit: 1000, window: '1h' },
      { algorithm: 'sliding-window', limit: 200, window: '1h' },
    ],
  ],
] as const)('four stores on one hot key admit exactly the limit (%s)', async (_, limits) => {
  const limiter = () =>
    createLimiter({
      store: new RedisStore({ client: connect(), packed: { groups: 8 } }),
      limits: limits as Limits,
    })
  // 4 stores x 100 in flight at once on one key (and one group): 400 tries for 200.
  const tries = [limiter(), limiter(), limiter(), limiter()].flatMap((one) =>
    Array.from({ length: 100 }, () => one.consume('hot')),
  )
  const decisions = await Promise.all(tries)
  expect(decisions.filter((d) => d.allowed)).toHaveLength(200)
  expect((await limiter().peek('hot')).policies.at(-1)?.remaining).toBe(0)
})

test('one script call a decision, with several limits too (a sliding window among them)', async () => {
  const client = connect()
  const store = new RedisStore({ client, packed: { groups: 16 } })
  const calls = async (limits: Limits) => {
    const limiter = createLimiter({ store, limits })
    await limiter.consume('warm-up')
    await redis.admin.config('RESETSTAT')
    for (let i = 0; i < 20; i++) await limiter.consume(`k${i}`)
    return (await scriptCalls()) / 20
  }
  expect(
    await calls([
      { limit: 10, window: '1m', algorithm: 'gcra' },
      { limit: 100, window: '1h', algorithm: 'fixed-window' },
      { limit: 20, window: '1m', algorithm: 'token-bucket' },
      { limit: 30, window: '1m', algorithm: 'leaky-bucket' },
    ]),
  ).toBe(1)
  // One limit: the packed layout's flat script of its algorithm.
  await redis.admin.script('FLUSH')
  expect(await calls([{ limit: 10, window: '1m', algorithm: 'gcra' }])).toBe(1)
  const flat = RedisStore.scripts['gcra:packed'].sha
  expect(await redis.admin.script('EXISTS', flat, RedisStore.scripts.packed.sha)).toEqual([1, 0])
  expect(await calls([{ limit: 10, window: '1m', algorithm: 'sliding-window' }])).toBe(1)
  // sliding-log keeps keys of its own (see the next test).
  expect(await calls([{ limit: 10, window: '1m', algorithm: 'sliding-log' }])).toBe(1)
  expect(
    await calls([
      { limit: 10, window: '1m', algorithm: 'gcra' },
      { limit: 20, window: '1m', algorithm: 'sliding-window' },
    ]),
  ).toBe(1)
  expect(
    await calls([
      { limit: 10, window: '1m', algorithm: 'gcra' },
      { limit: 20, window: '1m', algorithm: 'sliding-log' },
    ]),
  ).toBe(1)
})

test('sliding-log keeps keys of its own on a packed store, and blocks and resets reach them', async () => {
  let now = 1_764_000_000_000
  const store = new RedisStore({ client: connect(), time: 'client', packed: { groups: 1 } })
  const log = createLimiter({
    store,
    algorithm: 'sliding-log',
    limit: 3,
    window: '1m',
    clock: () => now,
  })
  const both = createLimiter({
    store,
    limits: [
      { algorithm: 'gcra', limit: 5, window: '1m' },
      { algorithm: 'sliding-log', limit: 4, window: '1m' },
    ],
    clock: () => now,
  })
  const meter = createLimiter({
    store,
    algorithm: 'gcra',
    limit: 5,
    window: '1m',
    clock: () => now,
  })
  for (const limiter of [log, both, meter]) await limiter.consume('carol')
  expect((await redis.admin.keys('*')).sort()).toEqual([
    'sluice:seed',
    'sluice:{%g0}:s',
    'sluice:{carol}:g5/1m',
    'sluice:{carol}:s3/1m',
    'sluice:{carol}:s4/1m',
  ])
  await meter.block('carol', 5000)
  for (const limiter of [log, both, meter]) {
    expect((await limiter.consume('carol')).retryAfterMs).toBe(5000)
  }
  now += 5000
  await log.reset('carol')
  await both.reset('carol')
  expect((await log.consume('carol')).remaining).toBe(2)
  expect((await both.consume('carol')).remaining).toBe(3)
  // The packed limit's state is its own, untouched by the resets: one unit taken at the start
  // (12 s of backlog), 5 s drained, one more now: 19 s of 60, 3 left.
  expect((await meter.consume('carol')).remaining).toBe(3)
})

test('the consumes of one turn share one script call, decided in order', async () => {
  let now = 1_764_000_000_000
  const store = new RedisStore({ client: connect(), time: 'client', packed: { groups: 4 } })
  const limiter = createLimiter({
    store,
    algorithm: 'fixed-window',
    limit: 3,
    window: '1m',
    clock: () => now,
  })
  await limiter.consume('warm-up')
  await limiter.block('c', 5000)
  await redis.admin.config('RESETSTAT')
  const keys = ['a', 'a', 'a', 'a', 'b', 'c', 'a', 'b', 'd', 'e']
  const decisions = await Promise.all(
    keys.map((key) => limiter.consume(key, { cost: key === 'd' ? 2 : 1 })),
  )
  expect(decisions.map((d) => d.allowed)).toEqual([
    true,
    true,
    true,
    false,
    true,
    false,
    false,
    true,
    true,
    true,
  ])
  expect(decisions[5].retryAfterMs).toBe(5000)
  expect(decisions.map((d) => d.remaining)).toEqual([2, 1, 0, 0, 2, 0, 0, 1, 1, 2])
  expect(await scriptCalls()).toBe(1)
  // What the batch wrote: d's two units, a's three.
  expect((await limiter.consume('d')).remaining).toBe(0)
  expect((await limiter.consume('a')).allowed).toBe(false)
  now += 60_000
  expect((await limiter.consume('a')).remaining).toBe(2)
})

test.each([
  ['one limit', [{ limit: 10, window: '1m', algorithm: 'fixed-window' }]],
  [
    'several limits',
    [
      { limit: 10, window: '1m', algorithm: 'fixed-window' },
      { limit: 10, window: '1h', algorithm: 'gcra' },
    ],
  ],
] as const)(
  'a batch reads block fields only while some key may be blocked, and sees a block another process set (%s)',
  async (_name, limits) => {
    let now = 1_764_000_000_000
    const storeOf = () =>
      new RedisStore({ client: connect(), time: 'client', packed: { groups: 4, seed: 's' } })
    const mine = createLimiter({ store: storeOf(), limits: [...limits], clock: () => now })
    const theirs = createLimiter({ store: storeOf(), limits: [...limits], clock: () => now })
    const batch = () => Promise.all(['x', 'y', 'z'].map((key) => mine.consume(key)))
    await batch() // new fields: the sweep's look at its count is an HGET too
    await redis.admin.config('RESETSTAT')
    expect((await batch()).map((d) => d.allowed)).toEqual([true, true, true])
    expect(await redis.scriptCalls()).toBe(1)
    // One limit reads each state with an HGET (several: one HMGET); no block field is read.
    const statesByHget = limits.length === 1
    expect((await redis.commandCalls()).hget ?? 0).toBe(statesByHget ? 3 : 0)
    // Another process blocks y: the flag it keeps alive makes this process's batches look.
    await theirs.block('y', 5000)
    now += 1000
    await redis.admin.config('RESETSTAT')
    const decisions = await batch()
    // The three block fields now, and the states of x and z (y's block answers before).
    expect((await redis.commandCalls()).hget).toBe(statesByHget ? 3 + 2 : 3)
    expect(decisions.map((d) => [d.allowed, d.retryAfterMs])).toEqual([
      [true, 0],
      [false, 4000],
      [true, 0],
    ])
    now += 4000
    expect((await batch()).map((d) => d.allowed)).toEqual([true, true, true])
  },
)

test('a limit decided by the packed script and by compare-and-set keeps one state', async () => {
  let now = 1_764_000_000_000
  const store = new RedisStore({ client: connect(), time: 'client', packed: { groups: 1 } })
  const gcra = { limit: 10, window: '1h', algorithm: 'gcra' } as const
  const alone = createLimiter({ store, limits: [gcra], clock: () => now })
  const mixed = createLimiter({
    store,
    limits: [gcra, { limit: 100, window: '1h', algorithm: 'sliding-window' }],
    clock: () => now,
  })
  const remaining: number[] = []
  for (let i = 0; i < 6; i++) {
    const limiter = i % 2 === 0 ? alone : mixed
    remaining.push((await limiter.consume('alice')).policies[0].remaining)
    now += 1
  }
  expect(remaining).toEqual([9, 8, 7, 6, 5, 4])
  // Core's state vector [TAT ms, remainder], after its expiry plus the tolerance: either path
  // reads the other's text.
  const field = await redis.admin.hget('sluice:{%g0}:s', 'g10/1h:alice')
  expect(field).toMatch(/^\d+;\d+,\d+$/)
  const [expires, tat] = (field as string).split(/[;,]/).map(Number)
  expect(tat).toBe(1_764_000_000_000 + 6 * 360_000)
  expect(expires).toBe(tat + 1000)
})

// Precision 1 too: its ring of two slots is written without a table (save_ring).
test.each([4, 1])(
  'a sliding window decided in Lua and by compare-and-set keeps one ring (precision %d)',
  async (precision) => {
    let now = 1_764_000_000_000
    const window = { limit: 10, window: '1m', algorithm: 'sliding-window', precision } as const
    const other = { limit: 100, window: '1h', algorithm: 'gcra' } as const
    const packed = new RedisStore({ client: connect(), time: 'client', packed: { groups: 1 } })
    const memory = new MemoryStore()
    const pair = (store: RedisStore | MemoryStore) => [
      createLimiter({ store, limits: [window], clock: () => now }),
      createLimiter({ store, limits: [window, other], clock: () => now }),
    ]
    const [alone, mixed] = pair(packed)
    const [aloneInMemory, mixedInMemory] = pair(memory)
    // Across buckets (15 s each) and out of the window: each path reads what the other wrote.
    for (let i = 0; i < 40; i++) {
      const [limiter, oracle] = i % 3 === 0 ? [mixed, mixedInMemory] : [alone, aloneInMemory]
      const [got, want] = [await limiter.consume('bob'), await oracle.consume('bob')]
      expect([i, got.allowed, got.policies[0].remaining, got.retryAfterMs]).toEqual([
        i,
        want.allowed,
        want.policies[0].remaining,
        want.retryAfterMs,
      ])
      now += 4_000
    }
    // Core's state vector: the newest bucket, then the ring's precision + 1 counts.
    const id = precision === 1 ? 'w10/1m' : `w10/1mp${precision}`
    const field = await redis.admin.hget('sluice:{%g0}:s', `${id}:bob`)
    expect(field).toMatch(new RegExp(`^\\d+;\\d+(,\\d+){${precision + 1}}$`))
  },
)

// A later expiry than any test's clock, so the rest of the field is read too: an expired field
// is gone, as a key past its TTL, and not read past its expiry.
const LATER = '9999999999999'

test.each([
  ['gcra', 'g5/1m', 'not a state'],
  ['gcra', 'g5/1m', `${LATER};1`],
  ['gcra', 'g5/1m', `${LATER};1,2,3`],
  ['gcra', 'g5/1m', `${LATER};1,x`],
  ['gcra', 'g5/1m', `;1,2`],
  ['gcra', 'g5/1m', ` ${LATER};1,2`],
  ['gcra', 'g5/1m', `${LATER};1.5,2`],
  ['gcra', 'g5/1m', `${LATER};0x10,2`],
  ['gcra', 'g5/1m', `${LATER};1,2 `],
  ['gcra', 'g5/1m', `nan;1,2`],
  ['gcra', 'g5/1m', `1e13;1,2`],
  ['gcra', 'g5/1m', `-5;1,2`],
  ['sliding-window', 'w5/1m', 'not a state'],
  ['sliding-window', 'w5/1m', `${LATER};1,2`],
  ['sliding-window', 'w5/1m', `${LATER};1,2,3,4`],
  ['sliding-window', 'w5/1m', `${LATER};1,2,`],
  ['sliding-window', 'w5/1m', `${LATER};1,2,0x3`],
  ['sliding-window', 'w5/1m', `${LATER};1,2,-3`],
] as const)(
  'a field that is not a state this store wrote fails the call, naming it (%s, %s, %j)',
  async (algorithm, id, value) => {
    const store = new RedisStore({ client: connect(), packed: { groups: 1 } })
    const limiter = createLimiter({ store, algorithm, limit: 5, window: '1m' })
    await redis.admin.hset('sluice:{%g0}:s', `${id}:mallory`, value)
    await expect(
      store.consume({
        key: 'mallory',
        policies: limiter.policies,
        cost: 1,
        now: Date.now(),
      }),
    ).rejects.toThrow(`sluice:{%g0}:s field ${id}:mallory holds ${value}`)
  },
)

test.each(['sliding-window', 'gcra'] as const)(
  'a block and a reset of a packed key (%s)',
  async (algorithm) => {
    let now = 1_764_000_000_000
    const store = new RedisStore({
      client: connect(),
      time: 'client',
      prefix: 'blocks',
      packed: { groups: 4 },
    })
    const limiter = createLimiter({ store, algorithm, limit: 3, window: '1m', clock: () => now })
    await limiter.consume('k')
    await limiter.block('k', 5000)
    const blocked = await limiter.consume('k')
    expect([blocked.allowed, blocked.retryAfterMs]).toEqual([false, 5000])
    now += 5000
    expect((await limiter.consume('k')).remaining).toBe(1)
    await limiter.reset('k')
    expect((await limiter.consume('k')).remaining).toBe(2)
    await limiter.reset('k')
    // Only the flag that tells batches to look for blocks, which expires with the block, and
    // the group hash's seed.
    expect((await redis.admin.keys('blocks:*')).sort()).toEqual(['blocks:blocks', 'blocks:seed'])
  },
)

test('packed options are checked, naming the option and the value', () => {
  const client = connect()
  expect(() => new RedisStore({ client, packed: { groups: 0 } })).toThrow(ConfigError)
  expect(() => new RedisStore({ client, packed: { groups: 0 } })).toThrow(
    '`packed.groups` must be a positive integer; got 0',
  )
  expect(() => new RedisStore({ client, packed: true as never })).toThrow(
    '`packed` must be false or { groups }; got true',
  )
  // A typo in a nested options object is refused by name, as at the top level.
  expect(() => new RedisStore({ client, packed: { group: 8 } as never })).toThrow(
    new ConfigError('unknown option `group` for RedisStore `packed` (value 8)'),
  )
  expect(() => new RedisStore({ client, blockCache: { maxkeys: 5 } as never })).toThrow(
    new ConfigError('unknown option `maxkeys` for RedisStore `blockCache` (value 5)'),
  )
  expect(() => new RedisStore({ client, prefx: 'a' } as never)).toThrow(
    new ConfigError('unknown option `prefx` for RedisStore (value "a")'),
  )
})
