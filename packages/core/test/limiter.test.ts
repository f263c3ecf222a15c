import {
  ALGORITHMS,
  ConfigError,
  createLimiter,
  MemoryStore,
  StoreError,
  type Store,
} from '@sluice/core'
import { burst, limiterAt } from './helpers'

describe('options are checked at creation, naming the option and the value', () => {
  const cases: [string, object, RegExp][] = [
    ['negative limit', { limit: -1, window: 1000 }, /`limit` must be a positive integer; got -1/],
    [
      'non-numeric limit',
      { limit: '10', window: 1000 },
      /`limit` must be a positive integer; got "10"/,
    ],
    ['fractional limit', { limit: 2.5, window: 1000 }, /`limit` .* got 2\.5/],
    ['zero window', { limit: 1, window: 0 }, /`window` must be .* got 0/],
    [
      'unparsable window',
      { limit: 1, window: '10 parsecs' },
      /`window` must be .* got "10 parsecs"/,
    ],
    [
      'unknown algorithm',
      { limit: 1, window: 1000, algorithm: 'magic' },
      /`algorithm` must be one of .*'gcra'.* got "magic"/,
    ],
    [
      'burst below 1',
      { limit: 5, window: 1000, algorithm: 'gcra', burst: 0 },
      /`burst` must be a positive integer; got 0/,
    ],
    [
      'burst on a counter',
      { limit: 5, window: 1000, algorithm: 'fixed-window', burst: 3 },
      /`burst` must be unset for 'fixed-window'/,
    ],
    [
      'precision not dividing',
      { limit: 5, window: 1000, precision: 3 },
      /`precision` must be a divisor of the window \(1000 ms\); got 3/,
    ],
    [
      'limits item',
      {
        limits: [
          { limit: 1, window: '1s' },
          { limit: 0, window: '1h' },
        ],
      },
      /`limits\[1\]\.limit` must be a positive integer; got 0/,
    ],
    ['empty limits', { limits: [] }, /`limits` must be a non-empty array/],
    [
      'both limit and limits',
      { limit: 3, limits: [{ limit: 1, window: 1 }] },
      /`limit` must be unset when `limits` is given/,
    ],
    ['missing limit', { window: 1000 }, /`limit` must be a positive integer .*; got undefined/],
    ['typo', { limit: 1, window: 1000, windowMS: 5 }, /unknown option `windowMS`/],
    ['bad store', { limit: 1, window: 1000, store: {} }, /`store` must be a Store/],
    [
      'bad onStoreError',
      { limit: 1, window: 1000, onStoreError: 'ignore' },
      /`onStoreError` must be .* got "ignore"/,
    ],
    [
      'bad timeoutMs',
      { limit: 1, window: 1000, timeoutMs: -5 },
      /`timeoutMs` must be a positive number of ms; got -5/,
    ],
    [
      'bad soft',
      { limit: 1, window: 1000, throttle: { soft: -0.1 } },
      /`throttle\.soft` must be a fraction >= 0.* got -0\.1/,
    ],
    [
      'bad elastic',
      { limit: 1, window: 1000, throttle: { elastic: 0.5 } },
      /`throttle\.elastic` must be a factor >= 1.* got 0\.5/,
    ],
    [
      'bad throttle',
      { limit: 1, window: 1000, throttle: 'firm' },
      /`throttle` must be 'hard'.* got "firm"/,
    ],
    ['limit past 2^50', { limit: 2 ** 51, window: '1d' }, /`limit` must be at most 2\^50/],
    [
      'sliding-log past 2^50 for limit x window',
      { algorithm: 'sliding-log', limit: 2 ** 40, window: '1d' },
      /`limit` must be small enough that limit x window \(86400000 ms\) stays under 2\^50 for 'sliding-log'/,
    ],
    ['window past 2^50 ms', { limit: 1, window: 2 ** 51 }, /`window` must be at most 2\^50 ms/],
  ]
  test.each(cases)('%s', (_name, options, message) => {
    expect(() => createLimiter(options as never)).toThrow(ConfigError)
    expect(() => createLimiter(options as never)).toThrow(message)
  })

  test('durations in every documented spelling', () => {
    for (const [window, ms] of [
      [250, 250],
      ['500ms', 500],
      ['10s', 10_000],
      ['15m', 900_000],
      ['1h', 3_600_000],
      ['1d', 86_400_000],
      ['1 minute', 60_000],
    ] as const) {
      expect(createLimiter({ limit: 1, window }).policies[0].windowMs).toBe(ms)
    }
  })

  test('defaults: sliding-window, burst = limit, a named policy', () => {
    const [policy] = createLimiter({ limit: 100, window: '1m' }).policies
    expect(policy).toMatchObject({
      algorithm: 'sliding-window',
      limit: 100,
      burst: 100,
      windowMs: 60_000,
      name: '100-per-1m',
      precision: 1,
    })
  })

  test('a bad cost or key at request time rejects the call without counting', async () => {
    const { limiter } = limiterAt(0, { limit: 3, window: 1000 })
    await expect(limiter.consume('k', { cost: 1.5 })).rejects.toThrow(
      /`cost` must be a positive integer; got 1\.5/,
    )
    await expect(limiter.consume('k', { cost: 0 })).rejects.toThrow(/`cost`/)
    await expect(limiter.consume(42 as never)).rejects.toThrow(/`key` must be a string; got 42/)
    expect((await limiter.peek('k')).remaining).toBe(3)
  })
})

describe('several limits per key', () => {
  test('all-or-nothing: a request one limit rejects consumes from none', async () => {
    const { limiter, clock } = limiterAt(0, {
      algorithm: 'fixed-window',
      limits: [
        { limit: 2, window: '1s', name: 'per-second' },
        { limit: 5, window: '1h', name: 'per-hour' },
      ],
    })
    const first = await burst(limiter, 'k', 3)
    expect(first.map((d) => d.allowed)).toEqual([true, true, false])
    expect(first[2].policy.name).toBe('per-second')
    expect(first[2].retryAfterMs).toBe(1000)
    // The rejected third did not count against the hour.
    expect(first[2].policies[1].remaining).toBe(3)
    clock.now = 1000
    await burst(limiter, 'k', 2)
    clock.now = 2000
    const [fifth, sixth] = await burst(limiter, 'k', 2)
    expect(fifth.allowed).toBe(true)
    expect(fifth.policy.name).toBe('per-hour')
    expect(fifth.remaining).toBe(0)
    expect(sixth.allowed).toBe(false)
    expect(sixth.policy.name).toBe('per-hour')
    expect(sixth.retryAfterMs).toBe(3_600_000 - 2000)
  })

  test('each limit may name its own algorithm; the binding one is reported', async () => {
    const { limiter } = limiterAt(0, {
      limits: [
        { algorithm: 'gcra', limit: 10, window: '1s', burst: 2 },
        { algorithm: 'sliding-log', limit: 3, window: '1m' },
      ],
    })
    const [a, b, c] = await burst(limiter, 'k', 3)
    expect([a.allowed, b.allowed, c.allowed]).toEqual([true, true, false])
    expect(b.remaining).toBe(0)
    expect(c.policy.algorithm).toBe('gcra')
    expect(c.retryAfterMs).toBe(100)
  })

  test('duplicate names are refused', () => {
    expect(() =>
      createLimiter({
        limits: [
          { limit: 1, window: 1000 },
          { limit: 1, window: 1000 },
        ],
      }),
    ).toThrow(/`limits\[1\]\.name` must be unique/)
  })

  test('the same limit twice under two names is refused: it would be charged twice', async () => {
    const twice = {
      limits: [
        { limit: 2, window: '1s', name: 'a' },
        { limit: 5, window: '1m', name: 'b' },
        { limit: 2, window: 1000, name: 'c' },
      ],
    }
    expect(() => createLimiter(twice)).toThrow(ConfigError)
    expect(() => createLimiter(twice)).toThrow(
      '`limits[2]` must be a limit unlike limits[0] (the same algorithm, limit, window and burst would share its count and be charged twice); got {"limit":2,"window":1000,"name":"c"}',
    )
    // Another algorithm, or burst, is another state: both count, each its own.
    const apart = createLimiter({
      limits: [
        { limit: 2, window: '1s', name: 'a' },
        { limit: 2, window: '1s', name: 'b', algorithm: 'gcra' },
      ],
    })
    const decisions = [await apart.consume('k'), await apart.consume('k'), await apart.consume('k')]
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, false])
  })
})

describe('cost', () => {
  test('a cost above the capacity is rejected with retryAfterMs Infinity and changes nothing', async () => {
    for (const algorithm of ALGORITHMS) {
      const { limiter } = limiterAt(5000, { algorithm, limit: 5, window: 1000 })
      const d = await limiter.consume('k', { cost: 6 })
      expect(d.allowed).toBe(false)
      expect(d.retryAfterMs).toBe(Infinity)
      expect(d.remaining).toBe(5)
      expect((await limiter.peek('k')).remaining).toBe(5)
    }
  })
})

describe('peek, refund, reset', () => {
  test('peek counts nothing; reset forgets; refund gives back', async () => {
    const { limiter, clock } = limiterAt(0, { algorithm: 'fixed-window', limit: 3, window: 1000 })
    await burst(limiter, 'k', 2)
    expect((await limiter.peek('k')).remaining).toBe(1)
    expect((await limiter.peek('k')).remaining).toBe(1)
    await limiter.refund('k', { at: 0 })
    expect((await limiter.peek('k')).remaining).toBe(2)
    clock.now = 1500
    await limiter.consume('k')
    await limiter.refund('k', { at: 500 }) // that window has reset: nothing to give back
    expect((await limiter.peek('k')).remaining).toBe(2)
    await limiter.reset('k')
    expect((await limiter.peek('k')).remaining).toBe(3)
  })

  test('refund never goes below empty', async () => {
    const { limiter } = limiterAt(0, { algorithm: 'token-bucket', limit: 3, window: 1000 })
    await limiter.consume('k')
    await limiter.refund('k', { cost: 5 })
    expect((await limiter.peek('k')).remaining).toBe(3)
    expect((await burst(limiter, 'k', 4)).map((d) => d.allowed)).toEqual([true, true, true, false])
  })
})

describe('throttling', () => {
  test('soft: admits 10% over the limit; remaining is reported against the nominal limit', async () => {
    const { limiter } = limiterAt(0, {
      algorithm: 'fixed-window',
      limit: 100,
      window: '1m',
      throttle: { soft: 0.1 },
    })
    const decisions = await burst(limiter, 'k', 111)
    expect(decisions.filter((d) => d.allowed)).toHaveLength(110)
    expect(decisions[0].limit).toBe(100)
    expect(decisions[0].remaining).toBe(99)
    expect(decisions[99].remaining).toBe(0)
    expect(decisions[105].remaining).toBe(0)
  })

  test('elastic: up to the factor while spare() says so, the nominal limit otherwise', async () => {
    let spare = true
    const { limiter, clock } = limiterAt(0, {
      algorithm: 'sliding-log',
      limit: 4,
      window: 1000,
      throttle: { elastic: 2, spare: () => spare },
    })
    expect((await burst(limiter, 'k', 9)).filter((d) => d.allowed)).toHaveLength(8)
    clock.now = 1000
    spare = false
    expect((await burst(limiter, 'k', 6)).filter((d) => d.allowed)).toHaveLength(4)
  })

  test('elastic works on every algorithm, the state shared with the nominal policy', async () => {
    for (const algorithm of [
      'fixed-window',
      'sliding-window',
      'token-bucket',
      'leaky-bucket',
      'gcra',
    ] as const) {
      let spare = true
      const { limiter } = limiterAt(0, {
        algorithm,
        limit: 3,
        window: 1000,
        throttle: { elastic: 2, spare: () => spare },
      })
      expect((await burst(limiter, 'k', 7)).filter((d) => d.allowed)).toHaveLength(6)
      spare = false
      expect((await limiter.consume('k')).allowed).toBe(false)
    }
  })
})

class BrokenStore implements Store {
  calls = 0
  constructor(private readonly failure: 'throw' | 'hang') {}
  consume(): Promise<never> {
    this.calls++
    return this.failure === 'throw'
      ? Promise.reject(new Error('connection refused'))
      : new Promise(() => {})
  }
  peek = this.consume
  refund = this.consume
  reset = this.consume
  penalize = this.consume
  block = this.consume
}

describe('store failures', () => {
  test("default 'throw': a StoreError with the cause, never a silent 429", async () => {
    const limiter = createLimiter({ limit: 1, window: 1000, store: new BrokenStore('throw') })
    const error = await limiter.consume('k').catch((e: unknown) => e)
    expect(error).toBeInstanceOf(StoreError)
    expect((error as StoreError).cause).toEqual(new Error('connection refused'))
    expect((error as StoreError).code).toBe('ERR_SLUICE_STORE')
  })

  test("'allow' fails open and 'deny' fails closed, both marked degraded", async () => {
    const open = await createLimiter({
      limit: 5,
      window: 1000,
      store: new BrokenStore('throw'),
      onStoreError: 'allow',
    }).consume('k')
    expect(open).toMatchObject({ allowed: true, degraded: true, limit: 5 })
    const closed = await createLimiter({
      limit: 5,
      window: 1000,
      store: new BrokenStore('throw'),
      onStoreError: 'deny',
    }).consume('k')
    expect(closed).toMatchObject({ allowed: false, degraded: true, retryAfterMs: 1000 })
  })

  test('a fallback limiter decides while the store is down', async () => {
    const fallback = createLimiter({
      limit: 2,
      window: 1000,
      algorithm: 'fixed-window',
      clock: () => 0,
    })
    const limiter = createLimiter({
      limit: 100,
      window: 1000,
      store: new BrokenStore('throw'),
      onStoreError: fallback,
    })
    const decisions = await burst(limiter, 'k', 3)
    expect(decisions.map((d) => [d.allowed, d.degraded, d.limit])).toEqual([
      [true, true, 2],
      [true, true, 2],
      [false, true, 2],
    ])
  })

  test('a store call slower than timeoutMs is a failure', async () => {
    const store = new BrokenStore('hang')
    const started = Date.now()
    const error = await createLimiter({ limit: 1, window: 1000, store, timeoutMs: 30 })
      .consume('k')
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(StoreError)
    expect((error as StoreError).code).toBe('ERR_SLUICE_STORE_TIMEOUT')
    expect(Date.now() - started).toBeGreaterThanOrEqual(25)
    const allowed = await createLimiter({
      limit: 1,
      window: 1000,
      store,
      timeoutMs: 30,
      onStoreError: 'allow',
    }).consume('k')
    expect(allowed.allowed).toBe(true)
  })

  test('timeoutMs counts from each call: calls in flight together time out in turn', async () => {
    const memory = new MemoryStore()
    const hanging: Store = {
      // Keys starting with "slow" never answer; the rest answer at once.
      consume: (request) =>
        request.key.startsWith('slow') ? new Promise(() => {}) : memory.consume(request),
      peek: (request) => memory.peek(request),
      refund: (request) => memory.refund(request),
      penalize: (request) => memory.penalize(request),
      block: (request) => memory.block(request),
      reset: (key, policies) => memory.reset(key, policies),
    }
    const limiter = createLimiter({ limit: 1000, window: '1h', store: hanging, timeoutMs: 60 })
    const started = Date.now()
    const settledAt = (promise: Promise<unknown>): Promise<number> =>
      promise.then(
        () => -1,
        () => Date.now() - started,
      )
    const first = settledAt(limiter.consume('slow-1'))
    await new Promise((resolve) => setTimeout(resolve, 30))
    const second = settledAt(limiter.consume('slow-2'))
    const fast = await Promise.all(Array.from({ length: 50 }, (_, i) => limiter.consume(`k${i}`)))
    expect(fast.every((d) => d.allowed)).toBe(true)
    const firstMs = await first
    const secondMs = await second
    expect(firstMs).toBeGreaterThanOrEqual(55)
    // The second call got its own 60 ms, not what was left of the first one's.
    expect(secondMs).toBeGreaterThanOrEqual(85)
    expect(secondMs).toBeGreaterThanOrEqual(firstMs) // a late timer may fail both at once
  })
})

describe('concurrency', () => {
  test('10,000 concurrent consumes on one key admit exactly the limit', async () => {
    for (const algorithm of ALGORITHMS) {
      const { limiter } = limiterAt(1_000_000, { algorithm, limit: 250, window: '1h' })
      const decisions = await Promise.all(
        Array.from({ length: 10_000 }, () => limiter.consume('hot')),
      )
      expect(decisions.filter((d) => d.allowed)).toHaveLength(250)
    }
  })

  test('limiters sharing a store keep apart by prefix', async () => {
    const store = new MemoryStore()
    const a = createLimiter({ limit: 1, window: 1000, store, prefix: 'a:' })
    const b = createLimiter({ limit: 1, window: 1000, store, prefix: 'b:' })
    expect((await a.consume('k')).allowed).toBe(true)
    expect((await b.consume('k')).allowed).toBe(true)
    expect((await a.consume('k')).allowed).toBe(false)
  })
})
