import { createLimiter } from '@sluice/core'
import { createRulesLimiter } from '@sluice/rules'
import { resolvePolicy } from '@sluice/core/adapter'
import { Redis } from 'ioredis'
import { RedisStore } from '@sluice/redis'
import { setTimeout as delay } from 'node:timers/promises'
import { oneRedis } from './one-redis'

// With time: 'server' a sliding log scores each admitted unit by Redis TIME, which the
// limiter's clock does not know. A refund at a decision's `at` (skipSuccessfulRequests,
// limiter.refund) must still remove exactly that decision's timestamps.
const redis = oneRedis()
let run = 0
let adminClient: Redis | undefined

/** A second connection, to read Redis TIME. */
const admin = (): Redis =>
  (adminClient ??= new Redis({ host: redis.server.host, port: redis.server.port }))

afterAll(() => adminClient?.disconnect())

const store = (batchSize = 32) =>
  new RedisStore({ client: redis.client, prefix: `str${run++}`, blockCache: false, batchSize })

test("sliding-log: a refund at each decision's `at` gives back exactly that decision", async () => {
  const limiter = createLimiter({
    store: store(),
    algorithm: 'sliding-log',
    limit: 3,
    window: '1h',
  })
  let exact = 0
  for (let i = 0; i < 20; i++) {
    const decision = await limiter.consume(`k${i}`, { cost: 2 })
    // Time passes between the charge and its refund on both clocks.
    await delay(3)
    await limiter.refund(`k${i}`, { at: decision.at, cost: 2 })
    if ((await limiter.peek(`k${i}`)).remaining === 3) exact++
  }
  expect(exact).toBe(20)
})

test('sliding-log beside a window, and rules: the same', async () => {
  const limiter = createLimiter({
    store: store(),
    limits: [
      { algorithm: 'sliding-log', limit: 3, window: '1h' },
      { algorithm: 'fixed-window', limit: 30, window: '1h' },
    ],
  })
  const first = await limiter.consume('both')
  const second = await limiter.consume('both')
  await delay(3)
  await limiter.refund('both', { at: first.at })
  await limiter.refund('both', { at: second.at })
  expect((await limiter.peek('both')).remaining).toBe(3)

  const rules = createRulesLimiter({
    store: store(),
    rules: {
      domain: 'api',
      descriptors: [
        {
          key: 'user',
          rate_limit: { unit: 'hour', requests_per_unit: 2, algorithm: 'sliding-log' },
        },
      ],
    },
  })
  for (let i = 0; i < 5; i++) {
    const result = await rules.consume([['user', '42']])
    expect(result.decision?.allowed).toBe(true)
    await delay(2)
    await rules.refund(result)
  }
})

describe.each([
  ['its flat script, batched', [{ algorithm: 'fixed-window', limit: 5, window: 200 }], 32],
  ['its flat script, alone', [{ algorithm: 'fixed-window', limit: 5, window: 200 }], 1],
  [
    'the generic script',
    [
      { algorithm: 'fixed-window', limit: 5, window: 200 },
      { algorithm: 'gcra', limit: 50, window: '1h' },
    ],
    32,
  ],
] as const)('fixed-window through %s', (_name, limits, batchSize) => {
  test('a charge is refunded in the window it was counted in, even once that window has ended', async () => {
    const policies = limits.map((limit) => resolvePolicy(limit))
    const redisStore = store(batchSize)
    const request = { key: `fw${run}`, policies, cost: 1, now: Date.now() }
    const [before] = await admin().time()
    const charged = await redisStore.consume(request)
    expect(charged.at).toBeGreaterThanOrEqual(Number(before) * 1000)
    const at = charged.at as number
    // Into the next window, where another request is counted.
    await delay(200 - (at % 200) + 20)
    expect((await redisStore.consume({ ...request, now: Date.now() })).outcomes[0]).toMatchObject({
      allowed: true,
      remaining: 4,
    })
    // The first charge's refund lands in its own (ended) window: the new one keeps its count.
    await redisStore.refund({ ...request, now: at, at, storeClock: true })
    const peek = await redisStore.peek({ ...request, cost: 0, now: Date.now() })
    expect(peek.outcomes[0].remaining).toBe(4)
  })
})
