import { ConfigError, MemoryStore, SluiceError, type Store, type StoreRequest } from '@sluice/core'
import { createRulesLimiter, loadRules, type RulesDocument } from '@sluice/rules'

const T0 = 60_000 * 30_000

const minute = (n: number) => ({ unit: 'minute' as const, requests_per_unit: n })

const RULES: RulesDocument = {
  domain: 'api',
  descriptors: [
    { key: 'route', value: '/login', rate_limit: minute(3) },
    { key: 'user', rate_limit: minute(2) },
    { key: 'user', value: 'admin', unlimited: true },
    { key: 'ip', rate_limit: minute(1), shadow_mode: true },
  ],
}

/** A MemoryStore that records every consume request. */
function recording() {
  const memory = new MemoryStore()
  const calls: StoreRequest[] = []
  const store: Store = {
    consume: (request) => {
      calls.push(request)
      return memory.consume(request)
    },
    peek: (request) => memory.peek(request),
    refund: (request) => memory.refund(request),
    reset: (key, policies) => memory.reset(key, policies),
    penalize: (request) => memory.penalize(request),
    block: (request) => memory.block(request),
    local: true,
  }
  return { store, calls }
}

describe('createRulesLimiter', () => {
  test('every matched rule in ONE store call: group key = domain, keys = state keys', async () => {
    const { store, calls } = recording()
    const limiter = createRulesLimiter({ rules: RULES, store, clock: () => T0 })
    const result = await limiter.consume([
      ['route', '/login'],
      ['user', '42'],
    ])
    expect(calls).toHaveLength(1)
    expect(calls[0]).toMatchObject({
      key: 'api',
      keys: ['api|route=/login', 'api|user=42'],
      cost: 1,
      now: T0,
    })
    expect(calls[0].policies.map((p) => p.name)).toEqual(['api.route_/login', 'api.user'])
    expect(calls[0]).not.toHaveProperty('maxDelayMs')
    expect(result.decision).toMatchObject({ allowed: true, limit: 2, remaining: 1 })
    expect(result.counted.map((m) => m.rule.name)).toEqual(['api.route_/login', 'api.user'])
  })

  test('all-or-nothing: a request one rule rejects is counted by none', async () => {
    const limiter = createRulesLimiter({ rules: RULES, clock: () => T0 })
    const alice = [
      ['route', '/login'],
      ['user', 'alice'],
    ] as const
    await limiter.consume(alice)
    await limiter.consume(alice)
    const third = await limiter.consume(alice)
    expect(third.decision).toMatchObject({ allowed: false, limit: 2 })
    expect(third.counted).toEqual([])
    // The route rule saw 2 of its 3: one more fits.
    const bob = await limiter.consume([
      ['route', '/login'],
      ['user', 'bob'],
    ])
    expect(bob.decision).toMatchObject({ allowed: true, limit: 3, remaining: 0 })
  })

  test('no match and unlimited: no decision', async () => {
    const limiter = createRulesLimiter({ rules: loadRules(RULES) })
    expect((await limiter.consume([['route', '/home']])).decision).toBeUndefined()
    const admin = await limiter.consume([['user', 'admin']])
    expect(admin.decision).toBeUndefined()
    expect(admin.matches).toEqual([])
  })

  test('shadow rules never block; when only they reject, the enforced rules still count', async () => {
    const { store, calls } = recording()
    const limiter = createRulesLimiter({ rules: RULES, store, clock: () => T0 })
    const entries = [
      ['user', 'carol'],
      ['ip', '10.0.0.1'],
    ] as const
    const first = await limiter.consume(entries)
    expect(first.decision).toMatchObject({ allowed: true, remaining: 1 })
    expect(first.shadowRejected).toEqual([])
    expect(calls).toHaveLength(1)
    const second = await limiter.consume(entries)
    expect(second.decision).toMatchObject({ allowed: true, remaining: 0 })
    expect(second.shadowRejected.map((m) => m.rule.name)).toEqual(['api.ip'])
    // One call decided both rules; the second counted the enforced rule alone.
    expect(calls).toHaveLength(3)
    expect(calls[2].keys).toEqual(['api|user=carol'])
    const third = await limiter.consume(entries)
    expect(third.decision?.allowed).toBe(false)
    // Shadow rules alone: decided, never a decision to enforce.
    const onlyShadow = await limiter.consume([['ip', '10.0.0.2']])
    expect(onlyShadow.decision).toBeUndefined()
    expect(onlyShadow.counted.map((m) => m.rule.name)).toEqual(['api.ip'])
  })

  test('refund gives back what a decision took', async () => {
    const limiter = createRulesLimiter({ rules: RULES, clock: () => T0 })
    const entries = [['user', 'dan']] as const
    const first = await limiter.consume(entries)
    await limiter.consume(entries)
    await limiter.refund(first)
    expect((await limiter.consume(entries)).decision?.allowed).toBe(true)
    expect((await limiter.consume(entries)).decision?.allowed).toBe(false)
  })

  test('prefix goes in front of the group key; cost is passed on', async () => {
    const { store, calls } = recording()
    const limiter = createRulesLimiter({ rules: RULES, store, prefix: 'svc:' })
    await limiter.consume([['user', 'x']], { cost: 2 })
    expect(calls[0]).toMatchObject({ key: 'svc:\u0000\u0002api', cost: 2 })
  })

  test("onStoreError: 'allow' and 'deny' decide without the store; 'throw' rejects", async () => {
    const fail = () => Promise.reject(new Error('down'))
    const down: Store = {
      consume: fail,
      peek: fail,
      refund: fail,
      reset: fail,
      penalize: fail,
      block: fail,
    }
    const entries = [['user', 'x']] as const
    const allow = createRulesLimiter({ rules: RULES, store: down, onStoreError: 'allow' })
    expect((await allow.consume(entries)).decision).toMatchObject({ allowed: true, degraded: true })
    const deny = createRulesLimiter({ rules: RULES, store: down, onStoreError: 'deny' })
    expect((await deny.consume(entries)).decision).toMatchObject({ allowed: false, degraded: true })
    const strict = createRulesLimiter({ rules: RULES, store: down, timeoutMs: 50 })
    await expect(strict.consume(entries)).rejects.toThrow(/store call failed/)
  })

  test('wait: meter rules reserve a slot in the same one call', async () => {
    const limiter = createRulesLimiter({
      clock: () => T0,
      rules: {
        domain: 'out',
        descriptors: [
          {
            key: 'api',
            rate_limit: { unit: 'second', requests_per_unit: 20, algorithm: 'gcra', burst: 1 },
          },
        ],
      },
    })
    const entries = [['api', 'maps']] as const
    const started = performance.now()
    const results = await Promise.all([0, 1, 2].map(() => limiter.wait(entries, { maxWaitMs: 80 })))
    expect(results.map((r) => r.decision?.allowed)).toEqual([true, true, false])
    expect(results.map((r) => r.decision?.delayMs)).toEqual([0, 50, 0])
    expect(performance.now() - started).toBeGreaterThanOrEqual(49)
    // Aborted while held: the slot goes back.
    const controller = new AbortController()
    const held = limiter.wait(entries, { maxWaitMs: 200, signal: controller.signal })
    setTimeout(() => controller.abort(), 5)
    await expect(held).rejects.toMatchObject({ name: 'AbortError', code: 'ERR_SLUICE_ABORTED' })
    const next = await limiter.wait(entries, { maxWaitMs: 200 })
    expect(next.decision?.delayMs).toBe(100)
  })

  test('bad options and arguments', async () => {
    expect(() => createRulesLimiter({ rules: 42 as never })).toThrow(ConfigError)
    expect(() => createRulesLimiter({ rules: 42 as never })).toThrow(
      /`rules` must be a rules file path, a rules object, a RuleSet or a RulesWatcher; got 42/,
    )
    expect(() => createRulesLimiter({ rules: RULES, onStoreError: 'ignore' as never })).toThrow(
      /`onStoreError` must be 'throw', 'allow' or 'deny'; got "ignore"/,
    )
    expect(() => createRulesLimiter({ rules: RULES, limit: 5 } as never)).toThrow(
      /unknown option `limit` for createRulesLimiter/,
    )
    const limiter = createRulesLimiter({ rules: RULES })
    await expect(limiter.consume('user' as never)).rejects.toThrow(SluiceError)
    await expect(limiter.consume([['user', 5]] as never)).rejects.toThrow(
      /`descriptors\[\]` must be a \[key, value\] pair of strings/,
    )
    await expect(limiter.consume([['user', 'x']], { cost: 0 })).rejects.toThrow(
      /`cost` must be a positive integer; got 0/,
    )
  })
})
