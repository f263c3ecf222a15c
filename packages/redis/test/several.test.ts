import { createLimiter, type LimitOptions, type Policy } from '@sluice/core'
import { resolvePolicy } from '@sluice/core/adapter'
import { RedisStore } from '@sluice/redis'
import { upstashUnderTest } from '@sluice/testkit'
import { Redis } from 'ioredis'
import { MAX_SEVERAL, SCRIPTS } from '../src/lua'
import { Planner } from '../src/plan'
import { routeOf } from '../src/route'
import { useRedisServer } from './fixtures/redis-server'

// Several policies of one key (consume, peek, timed refund) are decided by the plan's own flat
// script of them all (route.ts, lua/flat/several.ts), batched as one policy's: which route
// each plan takes, how many script calls a decision costs, and all-or-nothing on a real Redis.
// The conformance suite holds their decisions to core's (conformance.test.ts, packed.test.ts).

const policy = (options: LimitOptions & { name?: string }): Policy => resolvePolicy(options)
const gcra = policy({ name: 'meter', algorithm: 'gcra', limit: 10, window: 1000 })
const sliding = policy({ name: 'window', algorithm: 'sliding-window', limit: 5, window: 60_000 })
const fixed = policy({ name: 'minute', algorithm: 'fixed-window', limit: 3, window: 60_000 })
const log = policy({ name: 'log', algorithm: 'sliding-log', limit: 5, window: 60_000 })

describe('route of several policies', () => {
  const own = { engine: 'flat', script: undefined }
  test.each([
    ['keys', false, 'keys'],
    ['packed', true, 'packed'],
  ] as const)('2 and 3 policies on %s: flat, the plan’s own script', (_, packed, layout) => {
    expect(routeOf([gcra, sliding], false, packed, 'decide')).toEqual({ ...own, layout })
    expect(routeOf([gcra, sliding, fixed], false, packed, 'decide')).toEqual({ ...own, layout })
  })

  test('rewards and penalties: generic (keys), compare-and-set with a ring (packed)', () => {
    expect(routeOf([gcra, sliding], false, false, 'adjust')).toMatchObject({
      engine: 'generic',
      script: SCRIPTS.mixed,
    })
    expect(routeOf([gcra, sliding], false, true, 'adjust').engine).toBe('cas')
    expect(routeOf([gcra, fixed], false, true, 'adjust')).toMatchObject({
      engine: 'generic',
      script: SCRIPTS.packed,
    })
  })

  test('a log, two policies at one state, or more than MAX_SEVERAL: generic', () => {
    expect(routeOf([gcra, log], false, false, 'decide').engine).toBe('generic')
    const twin = policy({ name: 'twin', algorithm: 'gcra', limit: 10, window: 1000 })
    expect(twin.id).toBe(gcra.id)
    expect(routeOf([gcra, twin], false, false, 'decide').engine).toBe('generic')
    const many = Array.from({ length: MAX_SEVERAL + 1 }, (_, i) =>
      policy({ name: `l${i}`, algorithm: 'gcra', limit: 10 + i, window: 1000 }),
    )
    expect(routeOf(many.slice(0, MAX_SEVERAL), false, false, 'decide').engine).toBe('flat')
    expect(routeOf(many, false, false, 'decide').engine).toBe('generic')
  })

  test('the plan’s own script while the store makes them; past policyScripts, its adjust route', () => {
    const planner = new Planner('0', 1)
    const first = planner.plan([gcra, sliding])
    expect(first.decide.engine).toBe('flat')
    expect(first.own).toBeDefined()
    // The one script there may be is taken: the next plan decides as it adjusts.
    const second = planner.plan([gcra, fixed])
    expect(second.own).toBeUndefined()
    expect(second.decide).toBe(second.adjust)
    expect(second.decide.engine).toBe('generic')
  })
})

describe('several policies on a real Redis', () => {
  const redis = useRedisServer()
  const { connect, scriptCalls } = redis

  for (const [layout, packed] of [
    ['keys', undefined],
    ['packed', { groups: 16, seed: 'several' }],
  ] as const) {
    test(`${layout}: 64 consumes of one turn over 3 policies take 2 script calls`, async () => {
      const limiter = createLimiter({
        store: new RedisStore({ client: connect(), blockCache: false, packed }),
        limits: [
          { name: 'meter', algorithm: 'gcra', limit: 1000, window: '1h' },
          { name: 'window', algorithm: 'sliding-window', limit: 1000, window: '1h' },
          { name: 'minute', algorithm: 'fixed-window', limit: 1000, window: '1m' },
        ],
      })
      await limiter.consume('warm')
      await redis.admin.config('RESETSTAT')
      const results = await Promise.all(
        Array.from({ length: 64 }, (_, i) => limiter.consume(`${layout}:${i % 8}`)),
      )
      expect(await scriptCalls()).toBe(2)
      expect(results.every((r) => r.allowed)).toBe(true)
      // Eight consumes of each key: 1000 - 8 left under every limit.
      expect(results.slice(56).map((r) => r.remaining)).toEqual(Array(8).fill(992))
    })

    test(`${layout}: a request one policy rejects writes nothing to the others`, async () => {
      const limiter = createLimiter({
        store: new RedisStore({ client: connect(), blockCache: false, packed }),
        limits: [
          { name: 'meter', algorithm: 'gcra', limit: 100, window: '1h' },
          { name: 'window', algorithm: 'sliding-window', limit: 100, window: '1h' },
          { name: 'few', algorithm: 'fixed-window', limit: 2, window: '1h' },
        ],
      })
      const key = `${layout}:reject`
      const made = []
      for (let i = 0; i < 5; i++) made.push(await limiter.consume(key))
      expect(made.map((r) => r.allowed)).toEqual([true, true, false, false, false])
      const peeked = await limiter.peek(key)
      // Two admitted: 98 left under each wide limit, none under the narrow one.
      expect(peeked.policies.map((p) => p.remaining)).toEqual([98, 98, 0])
    })
  }

  for (const [layout, packed] of [
    ['keys', undefined],
    ['packed', { groups: 4, seed: 'several' }],
  ] as const) {
    test(`${layout}: in one batch, a failed decision fails alone beside blocked and counted ones`, async () => {
      const store = new RedisStore({ client: connect(), blockCache: false, packed })
      await failsAlone(store, redis.admin, `${layout}-`)
      expect(await scriptCalls()).toBe(1)
    })

    // Upstash's REST API sends an error inside a reply as its text, not as an error.
    test(`${layout}, @upstash/redis: a failed decision fails alone`, async () => {
      const upstash = await upstashUnderTest({ retry: false })
      const admin = new Redis(upstash.redisUrl)
      try {
        const store = new RedisStore({ client: upstash.client, blockCache: false, packed })
        await failsAlone(store, admin, `${layout}-up-`)
      } finally {
        admin.disconnect()
        await upstash.close()
      }
    })
  }

  /**
   * Five clients consume once, one is blocked and one's states made unreadable; then all of them
   * and the first again consume 2 in one turn (Redis's command counts reset just before): the
   * unreadable one fails, the rest are decided.
   */
  async function failsAlone(store: RedisStore, admin: Redis, prefix: string): Promise<void> {
    const limiter = createLimiter({
      store,
      limits: [
        { name: 'meter', algorithm: 'gcra', limit: 10, window: '1h' },
        { name: 'window', algorithm: 'sliding-window', limit: 10, window: '1h', precision: 4 },
        { name: 'minute', algorithm: 'fixed-window', limit: 10, window: '1h' },
      ],
    })
    const clients = ['a', 'b', 'poisoned', 'blocked', 'c'].map((c) => `${prefix}${c}`)
    for (const client of clients) await limiter.consume(client)
    await limiter.block(clients[3], 60_000)
    await poison(admin, clients[2])
    await admin.config('RESETSTAT')
    const consume = (key: string) =>
      store.consume({ key, policies: limiter.policies, cost: 2, now: Date.now() })
    const made = await Promise.allSettled([...clients, clients[0]].map(consume))
    const remaining = made.map((r) =>
      r.status === 'fulfilled' ? r.value.outcomes.map((o) => o.remaining) : 'failed',
    )
    expect(remaining).toEqual([[7, 7, 7], [7, 7, 7], 'failed', [0, 0, 0], [7, 7, 7], [5, 5, 5]])
    const blocked = made[3].status === 'fulfilled' ? made[3].value.outcomes : []
    expect(blocked.every((o) => !o.allowed && o.retryAfterMs > 59_000)).toBe(true)
    expect(String((made[2] as PromiseRejectedResult).reason)).toMatch(/WRONGTYPE|not a state/)
  }

  /** Makes every state of `client` unreadable: a list in place of each key or each field's text. */
  async function poison(admin: Redis, client: string): Promise<void> {
    for (const key of await admin.keys('*')) {
      const type = await admin.type(key)
      if (key.includes(client) && type === 'string') {
        await admin.del(key)
        await admin.rpush(key, 'x')
      }
      if (type !== 'hash') continue
      for (const field of await admin.hkeys(key)) {
        if (field.includes(client)) await admin.hset(key, field, 'not a state')
      }
    }
  }

  test('two sliding windows of other precisions (a field table each, and none past 30)', async () => {
    const limiter = createLimiter({
      store: new RedisStore({ client: connect(), blockCache: false }),
      limits: [
        { name: 'fine', algorithm: 'sliding-window', limit: 3, window: '1h', precision: 60 },
        { name: 'coarse', algorithm: 'sliding-window', limit: 5, window: '1h', precision: 4 },
      ],
    })
    const made = []
    for (let i = 0; i < 5; i++) made.push(await limiter.consume('precisions'))
    expect(made.map((r) => r.allowed)).toEqual([true, true, true, false, false])
    expect((await limiter.peek('precisions')).policies.map((p) => p.remaining)).toEqual([0, 2])
  })

  test(`MAX_SEVERAL policies of every variant with steps in one script`, async () => {
    const algorithms = ['gcra', 'sliding-window', 'fixed-window', 'token-bucket'] as const
    const limits = Array.from({ length: MAX_SEVERAL }, (_, i) => ({
      name: `l${i}`,
      algorithm: algorithms[i % algorithms.length],
      limit: 3 + i,
      window: '1h' as const,
    }))
    const limiter = createLimiter({
      store: new RedisStore({ client: connect(), blockCache: false }),
      limits,
    })
    const made = []
    for (let i = 0; i < 4; i++) made.push(await limiter.consume('eight'))
    // The narrowest limit (3) decides: three admitted, then none.
    expect(made.map((r) => r.allowed)).toEqual([true, true, true, false])
    expect((await limiter.peek('eight')).policies.map((p) => p.remaining)).toEqual(
      limits.map((l) => l.limit - 3),
    )
  })
})
