import {
  createLimiter,
  MemoryStore,
  StoreError,
  type DecisionEvent,
  type Store,
  type StoreRequest,
} from '@sluice/core'
import { Verdict } from '../src/decision'
import { burst, limiterAt } from './helpers'

describe('shadow: true decides and reports, but never blocks', () => {
  test('over the limit the decision admits, and `shadow` tells what enforcing would have said', async () => {
    const { limiter } = limiterAt(10_500, {
      algorithm: 'fixed-window',
      limit: 2,
      window: 1000,
      shadow: true,
    })
    const [first, second, third] = await burst(limiter, 'k', 3)
    expect(first.shadow).toEqual({ allowed: true, retryAfterMs: 0, delayMs: 0 })
    expect(second).toMatchObject({ allowed: true, remaining: 0 })
    expect(third).toMatchObject({
      allowed: true,
      retryAfterMs: 0,
      remaining: 0,
      limit: 2,
      degraded: false,
      shadow: { allowed: false, retryAfterMs: 500, delayMs: 0 },
    })
    expect(third.policies).toHaveLength(1)
    expect(third.policies[0].allowed).toBe(false) // per-policy outcomes stay the real ones
  })

  test('counts evolve exactly as when enforcing: rejected requests take nothing', async () => {
    const options = { algorithm: 'token-bucket', limit: 4, window: 60_000 } as const
    const enforcing = limiterAt(0, options)
    const shadow = limiterAt(0, { ...options, shadow: true })
    for (const at of [0, 0, 0, 0, 0, 0, 15_000, 15_000, 20_000]) {
      enforcing.clock.now = at
      shadow.clock.now = at
      const real = await enforcing.limiter.consume('k')
      const shadowed = await shadow.limiter.consume('k')
      expect(shadowed.shadow?.allowed).toBe(real.allowed)
      expect(shadowed.shadow?.retryAfterMs).toBe(real.retryAfterMs)
      expect(shadowed.remaining).toBe(real.remaining)
      expect(shadowed.allowed).toBe(true)
    }
  })

  test('leaky-bucket shaping is reported, not applied', async () => {
    const { limiter } = limiterAt(0, {
      algorithm: 'leaky-bucket',
      limit: 2,
      window: 1000,
      burst: 3,
      shadow: true,
    })
    const decisions = await burst(limiter, 'k', 4)
    expect(decisions.map((d) => d.delayMs)).toEqual([0, 0, 0, 0])
    expect(decisions.map((d) => d.shadow)).toEqual([
      { allowed: true, retryAfterMs: 0, delayMs: 0 },
      { allowed: true, retryAfterMs: 0, delayMs: 500 },
      { allowed: true, retryAfterMs: 0, delayMs: 1000 },
      { allowed: false, retryAfterMs: 500, delayMs: 0 },
    ])
  })

  test('several limits, peek and a failing store are all shadowed', async () => {
    const { limiter } = limiterAt(0, {
      limits: [
        { limit: 1, window: '1s', name: 'burst' },
        { limit: 5, window: '1h', name: 'hourly' },
      ],
      shadow: true,
    })
    await limiter.consume('k')
    const second = await limiter.consume('k')
    expect(second).toMatchObject({ allowed: true, shadow: { allowed: false } })
    expect(second.policy.name).toBe('burst')
    // peek asks for cost 0, which even a spent limit admits; it is marked as shadow all the same.
    expect(await limiter.peek('k')).toMatchObject({ allowed: true, remaining: 0, shadow: {} })

    const denying = createLimiter({
      limit: 1,
      window: 1000,
      store: failingStore(),
      onStoreError: 'deny',
      shadow: true,
    })
    expect(await denying.consume('k')).toMatchObject({
      allowed: true,
      degraded: true,
      shadow: { allowed: false, retryAfterMs: 1000 },
    })
  })

  test('`shadow` must be a boolean', () => {
    expect(() =>
      createLimiter({ limit: 1, window: 1000, shadow: 'yes' as unknown as boolean }),
    ).toThrow('`shadow` must be a boolean; got "yes"')
  })
})

function failingStore(): Store {
  const fail = () => Promise.reject(new Error('connection refused'))
  return { consume: fail, peek: fail, refund: fail, reset: fail, penalize: fail, block: fail }
}

describe('onDecision', () => {
  test('reports every consume: key, policy, allowed, remaining, shadow, latency, fallback', async () => {
    const events: DecisionEvent[] = []
    const { limiter } = limiterAt(0, {
      algorithm: 'fixed-window',
      limit: 2,
      window: 1000,
      name: 'two',
      prefix: 'p:',
      onDecision: (event) => events.push(event),
    })
    await burst(limiter, 'user:1', 3)
    await limiter.consume('user:2', { cost: 2 })
    await limiter.peek('user:1') // decides nothing: no event
    expect(
      events.map(({ storeLatencyMs, ...rest }) => ({ ...rest, timed: storeLatencyMs >= 0 })),
    ).toEqual([
      {
        key: 'user:1',
        policy: 'two',
        allowed: true,
        shadow: false,
        limit: 2,
        capacity: 2,
        remaining: 1,
        cost: 1,
        degraded: false,
        storeError: undefined,
        timed: true,
      },
      {
        key: 'user:1',
        policy: 'two',
        allowed: true,
        shadow: false,
        limit: 2,
        capacity: 2,
        remaining: 0,
        cost: 1,
        degraded: false,
        storeError: undefined,
        timed: true,
      },
      {
        key: 'user:1',
        policy: 'two',
        allowed: false,
        shadow: false,
        limit: 2,
        capacity: 2,
        remaining: 0,
        cost: 1,
        degraded: false,
        storeError: undefined,
        timed: true,
      },
      {
        key: 'user:2',
        policy: 'two',
        allowed: true,
        shadow: false,
        limit: 2,
        capacity: 2,
        remaining: 0,
        cost: 2,
        degraded: false,
        storeError: undefined,
        timed: true,
      },
    ])
  })

  test('in shadow mode `allowed` is what the limits said and `shadow` is true', async () => {
    const events: DecisionEvent[] = []
    const { limiter } = limiterAt(0, {
      limit: 1,
      window: 1000,
      shadow: true,
      onDecision: (event) => events.push(event),
    })
    await burst(limiter, 'k', 2)
    expect(events.map((e) => [e.allowed, e.shadow])).toEqual([
      [true, true],
      [false, true],
    ])
  })

  test('measures the store call of an asynchronous store', async () => {
    const memory = new MemoryStore()
    const slow: Store = {
      consume: (request: StoreRequest) =>
        new Promise((resolve) => setTimeout(() => resolve(memory.consume(request)), 20)),
      peek: (request) => memory.peek(request),
      refund: (request) => memory.refund(request),
      reset: (key, policies) => memory.reset(key, policies),
      penalize: (request) => memory.penalize(request),
      block: (request) => memory.block(request),
    }
    const events: DecisionEvent[] = []
    const limiter = createLimiter({
      limit: 5,
      window: 1000,
      store: slow,
      onDecision: (e) => events.push(e),
    })
    expect(await limiter.consume('k')).toMatchObject({ allowed: true, remaining: 4 })
    expect(events[0].storeLatencyMs).toBeGreaterThanOrEqual(15)
    expect(events[0].storeLatencyMs).toBeLessThan(1000)
  })

  test('store failures: fallback decisions are degraded, and `throw` still reports the error', async () => {
    const events: DecisionEvent[] = []
    const onDecision = (e: DecisionEvent) => events.push(e)
    const allowing = createLimiter({
      limit: 3,
      window: 1000,
      store: failingStore(),
      onStoreError: 'allow',
      onDecision,
    })
    await allowing.consume('a')
    const fallback = createLimiter({ limit: 1, window: 1000, name: 'local' })
    const falling = createLimiter({
      limit: 3,
      window: 1000,
      store: failingStore(),
      onStoreError: fallback,
      onDecision,
    })
    await falling.consume('b')
    const throwing = createLimiter({ limit: 3, window: 1000, store: failingStore(), onDecision })
    await expect(throwing.consume('c')).rejects.toThrow(StoreError)
    expect(
      events.map((e) => [e.key, e.policy, e.allowed, e.degraded, e.storeError?.message]),
    ).toEqual([
      ['a', '3-per-1s', true, true, 'store call failed'],
      ['b', 'local', true, true, 'store call failed'],
      ['c', '3-per-1s', false, false, 'store call failed'],
    ])
    expect(events[2].storeError).toBeInstanceOf(StoreError)
  })

  test('a hook that throws changes no decision and is reported once', async () => {
    const warn = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined)
    try {
      const { limiter } = limiterAt(0, {
        limit: 1,
        window: 1000,
        onDecision: () => {
          throw new Error('metrics down')
        },
      })
      expect((await limiter.consume('k')).allowed).toBe(true)
      expect((await limiter.consume('k')).allowed).toBe(false)
      expect(warn).toHaveBeenCalledTimes(1)
      expect(String(warn.mock.calls[0][0])).toContain('metrics down')
    } finally {
      warn.mockRestore()
    }
  })

  test('`onDecision` must be a function', () => {
    expect(() => createLimiter({ limit: 1, window: 1000, onDecision: 5 as never })).toThrow(
      '`onDecision` must be a function receiving each DecisionEvent; got 5',
    )
  })
})

describe('without shadow mode or a hook the hot path is unchanged', () => {
  test("a single-policy memory decision is the store's own Verdict object", async () => {
    const store = new MemoryStore()
    const seen: unknown[] = []
    const consumeOneNow = store.consumeOneNow.bind(store)
    store.consumeOneNow = (...args) => {
      const outcome = consumeOneNow(...args)
      seen.push(outcome)
      return outcome
    }
    const limiter = createLimiter({ limit: 2, window: 1000, store })
    const decision = await limiter.consume('k')
    expect(decision).toBeInstanceOf(Verdict)
    expect(decision).toBe(seen[0])
    expect(decision.shadow).toBeUndefined()
    expect(Object.keys(decision)).not.toContain('shadow')
  })
})
