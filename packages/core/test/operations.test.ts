import {
  ConfigError,
  createLimiter,
  MemoryStore,
  SluiceError,
  type Store,
  type StoreBlock,
  type StoreRefund,
  type StoreRequest,
} from '@sluice/core'
import { Verdict } from '../src/decision'
import { burst, limiterAt, sharedMemory } from './helpers'

const T0 = 60_000 * 30_000

describe('get', () => {
  test('reports the state and consumes nothing; peek is the same call', async () => {
    const { limiter } = limiterAt(T0, { algorithm: 'fixed-window', limit: 3, window: 60_000 })
    await limiter.consume('k')
    for (let i = 0; i < 3; i++) {
      const state = await limiter.get('k')
      expect(state).toMatchObject({ allowed: true, limit: 3, remaining: 2 })
    }
    expect(await limiter.peek('k')).toMatchObject({ remaining: 2 })
    expect((await limiter.consume('k')).remaining).toBe(1)
  })

  test('an unknown key reads as full', async () => {
    const { limiter } = limiterAt(T0, { algorithm: 'gcra', limit: 10, window: 1000, burst: 4 })
    expect(await limiter.get('nobody')).toMatchObject({ allowed: true, remaining: 4 })
  })
})

describe('block', () => {
  test('refuses the key for ms whatever its counters say, then lets it go', async () => {
    const { limiter, clock } = limiterAt(T0, {
      algorithm: 'sliding-window',
      limit: 5,
      window: 60_000,
    })
    await limiter.block('k', 30_000)
    const refused = await limiter.consume('k')
    expect(refused.allowed).toBe(false)
    expect(refused.retryAfterMs).toBe(30_000)
    expect((await limiter.get('k')).allowed).toBe(false)
    // Other keys are untouched.
    expect((await limiter.consume('other')).allowed).toBe(true)
    clock.now += 29_999
    expect((await limiter.consume('k')).retryAfterMs).toBe(1)
    clock.now += 1
    const after = await limiter.consume('k')
    // The refused requests took nothing: the whole quota is there.
    expect(after).toMatchObject({ allowed: true, remaining: 4 })
  })

  test('hands the store a whole ms: a fraction rounds up, an end past 2^53 is 2^53 - 1', async () => {
    const blocks: StoreBlock[] = []
    const memory = new MemoryStore()
    const store = sharedMemory(
      {
        block: (request) => {
          blocks.push(request)
          return memory.block(request)
        },
      },
      memory,
    )
    const at = T0 + 0.25
    const limiter = createLimiter({ limit: 5, window: 60_000, store, clock: () => at })
    await limiter.block('k', 2500.5)
    await limiter.block('forever', 1e308)
    // A shared store reads the clock in whole ms (see the test below).
    expect(blocks.map(({ until, now }) => [until, now])).toEqual([
      [T0 + 2501, T0],
      [Number.MAX_SAFE_INTEGER, T0],
    ])
    expect((await limiter.consume('k')).retryAfterMs).toBe(2501)
    expect((await limiter.consume('forever')).allowed).toBe(false)
  })

  test('a given clock with a fraction is read in whole ms by a shared store, kept in process', async () => {
    const seen: number[] = []
    const memory = new MemoryStore()
    const shared = sharedMemory(
      {
        consume: (request) => {
          seen.push(request.now)
          return memory.consume(request)
        },
      },
      memory,
    )
    const clock = () => T0 + 0.75
    await createLimiter({ limit: 5, window: 60_000, store: shared, clock }).consume('k')
    const local = Object.assign(shared, { local: true as const })
    await createLimiter({ limit: 5, window: 60_000, store: local, clock }).consume('k')
    expect(seen).toEqual([T0, T0 + 0.75])
  })

  test('is kept apart from the counters: consumes do not overwrite it; reset lifts it', async () => {
    const { limiter } = limiterAt(T0, { algorithm: 'token-bucket', limit: 2, window: 1000 })
    await limiter.block('k', 5000)
    await burst(limiter, 'k', 5)
    expect((await limiter.consume('k')).retryAfterMs).toBe(5000)
    await limiter.reset('k')
    expect((await limiter.consume('k')).allowed).toBe(true)
  })

  test('a later block replaces an earlier one', async () => {
    const { limiter } = limiterAt(T0, { limit: 2, window: 1000 })
    await limiter.block('k', 60_000)
    await limiter.block('k', 1000)
    expect((await limiter.consume('k')).retryAfterMs).toBe(1000)
  })

  test('uses the prefix like every other call', async () => {
    const store = new MemoryStore()
    const a = createLimiter({ limit: 1, window: 1000, store, prefix: 'a:' })
    const b = createLimiter({ limit: 1, window: 1000, store, prefix: 'b:' })
    await a.block('k', 10_000)
    expect((await a.consume('k')).allowed).toBe(false)
    expect((await b.consume('k')).allowed).toBe(true)
  })

  test.each([0, -1, Number.NaN, Infinity, '10s'])(
    'ms %p is a SluiceError naming it',
    async (ms) => {
      const { limiter } = limiterAt(T0, { limit: 1, window: 1000 })
      const call = limiter.block('k', ms as number)
      await expect(call).rejects.toThrow(SluiceError)
      await expect(limiter.block('k', ms as number)).rejects.toThrow(
        /`ms` must be a positive finite number of ms; got/,
      )
    },
  )
})

describe('penalize', () => {
  test('takes cost units whatever the limit says', async () => {
    const { limiter } = limiterAt(T0, { algorithm: 'fixed-window', limit: 5, window: 60_000 })
    await limiter.penalize('k', 3)
    expect((await limiter.get('k')).remaining).toBe(2)
    await limiter.consume('k')
    await limiter.penalize('k') // default cost 1
    expect((await limiter.get('k')).remaining).toBe(0)
    expect((await limiter.consume('k')).allowed).toBe(false)
  })

  test('never beyond full: a penalty larger than the capacity recovers like a full bucket', async () => {
    const { limiter, clock } = limiterAt(T0, {
      algorithm: 'token-bucket',
      limit: 4,
      window: 60_000,
    })
    await limiter.penalize('k', 100)
    const refused = await limiter.consume('k')
    expect(refused.allowed).toBe(false)
    expect(refused.retryAfterMs).toBe(15_000)
    clock.now += 15_000
    expect((await limiter.consume('k')).allowed).toBe(true)
  })

  test('applies to every policy of the limiter', async () => {
    const { limiter } = limiterAt(T0, {
      algorithm: 'fixed-window',
      limits: [
        { limit: 5, window: '1s', name: 'second' },
        { limit: 50, window: '1m', name: 'minute' },
      ],
    })
    await limiter.penalize('k', 2)
    const state = await limiter.get('k')
    expect(state.policies.map((p) => p.remaining)).toEqual([3, 48])
  })
})

describe('reward', () => {
  test('gives units back from the newest usage', async () => {
    const { limiter } = limiterAt(T0, { algorithm: 'sliding-log', limit: 3, window: 60_000 })
    await burst(limiter, 'k', 3)
    expect((await limiter.consume('k')).allowed).toBe(false)
    await limiter.reward('k', 2)
    expect((await limiter.get('k')).remaining).toBe(2)
    await limiter.reward('k') // default cost 1
    expect((await limiter.get('k')).remaining).toBe(3)
  })

  test.each([
    'fixed-window',
    'sliding-window',
    'sliding-log',
    'token-bucket',
    'gcra',
    'leaky-bucket',
  ] as const)(
    '%s: never below empty (more than taken gives a full quota, no extra)',
    async (algorithm) => {
      const { limiter } = limiterAt(T0, { algorithm, limit: 4, window: 60_000 })
      await limiter.consume('k')
      await limiter.reward('k', 10)
      expect((await limiter.get('k')).remaining).toBe(4)
      const decisions = await burst(limiter, 'k', 5)
      expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, true, false])
    },
  )

  test('penalize then reward the same amount restores the state', async () => {
    const { limiter } = limiterAt(T0, { algorithm: 'gcra', limit: 10, window: 1000, burst: 5 })
    await limiter.consume('k')
    await limiter.penalize('k', 3)
    expect((await limiter.get('k')).remaining).toBe(1)
    await limiter.reward('k', 3)
    expect((await limiter.get('k')).remaining).toBe(4)
  })
})

describe('argument checks', () => {
  const { limiter } = limiterAt(T0, { limit: 5, window: 1000 })

  test.each([
    ['penalize', () => limiter.penalize('k', 0), /`cost` must be a positive integer; got 0/],
    ['penalize', () => limiter.penalize('k', 1.5), /`cost` must be a positive integer; got 1.5/],
    ['reward', () => limiter.reward('k', -2), /`cost` must be a positive integer; got -2/],
    ['block', () => limiter.block(42 as unknown as string, 10), /`key` must be a string; got 42/],
    [
      'get',
      () => limiter.get(undefined as unknown as string),
      /`key` must be a string; got undefined/,
    ],
  ])('%s: %p', async (_name, call, message) => {
    await expect(call()).rejects.toThrow(SluiceError)
    await expect(call()).rejects.toThrow(message)
  })

  test('a custom store without block/penalize: a SluiceError naming the method', async () => {
    const memory = new MemoryStore()
    const legacy = {
      consume: (r: StoreRequest) => memory.consume(r),
      peek: (r: StoreRequest) => memory.peek(r),
      refund: (r: StoreRefund) => memory.refund(r),
      reset: (key: string, policies: StoreRequest['policies']) => memory.reset(key, policies),
    } as unknown as Store
    const old = createLimiter({ limit: 1, window: 1000, store: legacy })
    await expect(old.block('k', 10)).rejects.toThrow(/does not implement `block`/)
    await expect(old.penalize('k', 1)).rejects.toMatchObject({ code: 'ERR_SLUICE_UNSUPPORTED' })
    expect((await old.consume('k')).allowed).toBe(true)
  })

  test('block passes until = now + ms on the limiter clock to the store', async () => {
    const calls: StoreBlock[] = []
    const memory = new MemoryStore()
    const spy: Store = {
      consume: (r) => memory.consume(r),
      peek: (r) => memory.peek(r),
      refund: (r) => memory.refund(r),
      reset: (key, policies) => memory.reset(key, policies),
      penalize: (r) => memory.penalize(r),
      block: (r) => {
        calls.push(r)
        return memory.block(r)
      },
      local: true,
    }
    const limiter2 = createLimiter({
      limit: 1,
      window: 1000,
      store: spy,
      clock: () => T0,
      prefix: 'p:',
    })
    await limiter2.block('k', 2500)
    expect(calls).toEqual([{ key: 'p:\u0000\u0002k', until: T0 + 2500, now: T0 }])
  })
})

describe('the consume hot path', () => {
  test('a single policy on a MemoryStore returns the store Verdict itself', async () => {
    const store = new MemoryStore()
    const consumeOneNow = jest.spyOn(store, 'consumeOneNow')
    const consume = jest.spyOn(store, 'consume')
    const limiter = createLimiter({ limit: 5, window: 1000, store })
    const decision = await limiter.consume('k')
    expect(decision).toBeInstanceOf(Verdict)
    expect(decision).toBe(consumeOneNow.mock.results[0].value)
    expect(consume).not.toHaveBeenCalled()
  })
})

test('wait on a counter algorithm is a ConfigError at the call', async () => {
  const { limiter } = limiterAt(T0, { algorithm: 'sliding-window', limit: 5, window: 1000 })
  // Reported through the promise, like every other argument error.
  const call = limiter.wait('k')
  await expect(call).rejects.toThrow(ConfigError)
  await expect(limiter.wait('k')).rejects.toThrow(
    /`wait` needs a meter algorithm \(token-bucket, leaky-bucket or gcra\).*"sliding-window"/,
  )
})
