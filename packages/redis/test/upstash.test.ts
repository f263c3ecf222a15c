import { createLimiter, StoreError, type LimiterOptions } from '@sluice/core'
import { RedisStore, type RedisStoreOptions } from '@sluice/redis'
import { describeStoreConformance, upstashUnderTest, type UpstashUnderTest } from '@sluice/testkit'
import { Redis as UpstashRedis } from '@upstash/redis'
import { Redis } from 'ioredis'

// The real @upstash/redis client, through a gateway speaking Upstash's REST protocol, to a
// real redis-server (packages/testkit/src/upstash-gateway.ts).

/** The conformance suite on a store built from `options` (time: 'client', as the others). */
function conformance(name: string, options: Partial<RedisStoreOptions> = {}): void {
  describeStoreConformance(
    `RedisStore on @upstash/redis (REST gateway${name})`,
    async () => {
      const upstash = await upstashUnderTest({ retry: false })
      const client = upstash.client
      const store = new RedisStore({ client, time: 'client', clockToleranceMs: 60_000, ...options })
      return { store, close: () => upstash.close() }
    },
    { traceRuns: 30 },
  )
}

conformance('')
// Packed hashes (wide budgets decided in this process, written by compare-and-set scripts).
conformance(', packed', { packed: { groups: 16 } })

const TIMEOUT_MS = 100
// Margin for timers on a busy 2-core machine.
const SLACK_MS = 50

let upstash: UpstashUnderTest
let direct: Redis
let n = 0
const unhandled: unknown[] = []
const onUnhandled = (reason: unknown): void => {
  unhandled.push(reason)
}
const fresh = (): string => `up-${Date.now()}-${n++}`

beforeAll(async () => {
  upstash = await upstashUnderTest({ retry: false })
  direct = new Redis(upstash.redisUrl)
  process.on('unhandledRejection', onUnhandled)
})

afterAll(async () => {
  process.off('unhandledRejection', onUnhandled)
  direct.disconnect()
  await upstash.close()
})

afterEach(() => {
  upstash.gateway.release()
  expect(unhandled).toEqual([])
})

function limiter(options: Partial<LimiterOptions> = {}, client = upstash.client) {
  const store = new RedisStore({ client, blockCache: false })
  const limits = options.limits === undefined ? { limit: 5, window: '1m' } : {}
  return createLimiter({ ...limits, store, timeoutMs: TIMEOUT_MS, ...options })
}

describe('RedisStore on @upstash/redis', () => {
  it('counts exactly, with a client from Redis.fromEnv()', async () => {
    process.env.UPSTASH_REDIS_REST_URL = upstash.gateway.url
    process.env.UPSTASH_REDIS_REST_TOKEN = upstash.gateway.token
    try {
      const limit = limiter({}, UpstashRedis.fromEnv({ retry: false }))
      const key = fresh()
      const allowed: boolean[] = []
      for (let i = 0; i < 7; i++) allowed.push((await limit.consume(key)).allowed)
      expect(allowed).toEqual([true, true, true, true, true, false, false])
    } finally {
      delete process.env.UPSTASH_REDIS_REST_URL
      delete process.env.UPSTASH_REDIS_REST_TOKEN
    }
  })

  it('sends the decisions of one turn, several limits each, as one /pipeline request', async () => {
    const limit = limiter({
      limits: [
        { limit: 3, window: '1s' },
        { limit: 10, window: '1m' },
      ],
    })
    await limit.consume(fresh()) // the first call loads the script (EVAL)
    const before = { ...upstash.gateway.requests }
    const keys = Array.from({ length: 10 }, fresh)
    const decisions = await Promise.all([...keys, ...keys].map((key) => limit.consume(key)))
    expect(decisions.map((d) => d.remaining)).toEqual([...keys.map(() => 2), ...keys.map(() => 1)])
    expect(upstash.gateway.requests.pipeline - before.pipeline).toBe(1)
    expect(upstash.gateway.requests.single).toBe(before.single)
  })

  it('runs the script again with EVAL after NOSCRIPT, counting once', async () => {
    const limit = limiter()
    const key = fresh()
    await limit.consume(key)
    await direct.script('FLUSH')
    expect((await limit.consume(key)).remaining).toBe(3)
    expect((await limit.peek(key)).remaining).toBe(3)
  })

  it('after NOSCRIPT, the EVALs of 64 decisions in flight go in requests of at most 512 KiB', async () => {
    const limit = limiter({
      limits: [
        { limit: 10, window: '1s', algorithm: 'sliding-log' },
        { limit: 100, window: '1m', algorithm: 'token-bucket' },
      ],
      timeoutMs: 10_000,
    })
    const keys = Array.from({ length: 64 }, fresh)
    await Promise.all(keys.map((key) => limit.peek(key))) // the scripts loaded
    await direct.script('FLUSH')
    const sizes: number[] = []
    const realFetch = globalThis.fetch
    globalThis.fetch = (input, init) => {
      sizes.push(Buffer.byteLength(typeof init?.body === 'string' ? init.body : ''))
      return realFetch(input, init)
    }
    try {
      // Each peek's EVALSHA gets NOSCRIPT and retries with an EVAL of the whole shared script.
      const peeks = await Promise.all(keys.map((key) => limit.peek(key)))
      expect(peeks.map((d) => [d.degraded, d.remaining])).toEqual(keys.map(() => [false, 10]))
    } finally {
      globalThis.fetch = realFetch
    }
    expect(sizes.length).toBeGreaterThan(2)
    // Upstash refuses a request past 1 MB (free plan): 64 such EVALs in one were 1.35 MB.
    expect(Math.max(...sizes)).toBeLessThan(600 * 1024)
  })

  it('fails only the command whose script fails inside a pipeline', async () => {
    const limit = limiter({ onStoreError: 'throw' })
    const bad = fresh()
    const good = fresh()
    await Promise.all([limit.consume(bad), limit.consume(good)])
    // The bad key's state becomes a list: its script fails with WRONGTYPE.
    const [state] = await direct.keys(`sluice:{${bad}}:*`)
    await direct.del(state)
    await direct.rpush(state, 'x')
    const before = upstash.gateway.requests.pipeline
    const [failed, passed] = await Promise.allSettled([limit.consume(bad), limit.consume(good)])
    expect(upstash.gateway.requests.pipeline - before).toBe(1)
    expect(failed.status).toBe('rejected')
    expect((failed as PromiseRejectedResult).reason).toBeInstanceOf(StoreError)
    expect(String(((failed as PromiseRejectedResult).reason as Error).cause)).toMatch(/WRONGTYPE/)
    expect(passed).toEqual({
      status: 'fulfilled',
      value: expect.objectContaining({ remaining: 3 }),
    })
  })

  it('refuses a bad token with a clear error, then answers by onStoreError', async () => {
    const wrong = new UpstashRedis({ url: upstash.gateway.url, token: 'wrong', retry: false })
    const throwing = limiter({ onStoreError: 'throw', breaker: false }, wrong)
    const error = await throwing.consume(fresh()).then(
      () => undefined,
      (e: unknown) => e as StoreError,
    )
    expect(error).toBeInstanceOf(StoreError)
    expect(String(error?.cause)).toMatch(/Unauthorized.*UPSTASH_REDIS_REST_TOKEN/)
    const denying = limiter({ onStoreError: 'deny' }, wrong)
    expect((await denying.consume(fresh())).allowed).toBe(false)
  })

  it('says at first use that url and token are missing', async () => {
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined)
    try {
      const client = UpstashRedis.fromEnv({ retry: false })
      const limit = limiter({ onStoreError: 'throw' }, client)
      const error = await limit.consume(fresh()).then(
        () => undefined,
        (e: unknown) => e as StoreError,
      )
      expect(String(error?.cause)).toMatch(/UPSTASH_REDIS_REST_URL and UPSTASH_REDIS_REST_TOKEN/)
    } finally {
      warn.mockRestore()
    }
  })

  it('answers an HTTP 5xx by onStoreError and charges nothing', async () => {
    const limit = limiter({ onStoreError: 'deny' })
    const key = fresh()
    await limit.consume(key)
    upstash.gateway.failNext(503)
    const failed = await limit.consume(key)
    expect(failed).toMatchObject({ allowed: false, degraded: true })
    expect((await limit.consume(key)).remaining).toBe(3)
  })

  it('answers a hung endpoint within timeoutMs, and refunds the late charge', async () => {
    const limit = limiter({ onStoreError: 'allow', breaker: false })
    // The charge before the hang and the reads after it go through a limiter of the same
    // policy with time to answer: on a loaded machine a call of the one under test may itself
    // take over its 100 ms, and be answered without the store.
    const patient = limiter({ timeoutMs: 10_000 })
    const key = fresh()
    expect(await patient.consume(key)).toMatchObject({ allowed: true, remaining: 4 })
    upstash.gateway.hold()
    const started = performance.now()
    const decision = await limit.consume(key)
    const took = performance.now() - started
    expect(decision).toMatchObject({ allowed: true, degraded: true })
    expect(took).toBeLessThan(TIMEOUT_MS + SLACK_MS)
    upstash.gateway.release()
    // The held consume runs late and is refunded: only the first one counts.
    for (let i = 0; i < 50 && (await patient.peek(key)).remaining !== 4; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    expect((await patient.peek(key)).remaining).toBe(4)
  })
})
