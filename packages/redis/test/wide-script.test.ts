import fc from 'fast-check'
import { createLimiter, type Policy } from '@sluice/core'
import { isWide, resolvePolicy } from '@sluice/core/adapter'
import { algorithmOf, LIMBS_LUA } from '@sluice/core/web'
import { policyKeyId, RedisStore, SCRIPTS } from '@sluice/redis'
import { startRedis, type RedisServer } from '@sluice/testkit'
import { Redis } from 'ioredis'

// Wide budgets (limit x window past 2^50) are decided by one script (route.ts, lua/wide.ts),
// whose meters compute on limbs (core's limbs.lua.ts): held here to BigInt on a real Redis, at
// the edges where a double would round, and to the text compare-and-set keeps in `:v` keys.

let server: RedisServer
let redis: Redis

beforeAll(async () => {
  server = await startRedis()
  redis = new Redis({ host: server.host, port: server.port })
})

afterAll(async () => {
  redis?.disconnect()
  await server?.stop()
})

/** The limb arithmetic on its own: each operation of ARGV on operands below 2^53. */
const HARNESS = `local floor, format = math.floor, string.format
${LIMBS_LUA}
local a, b, c, d = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local op = ARGV[1]
if op == 'mul' then return w_mul(a, b) end
if op == 'muladd' then return w_muladd(a, b, c) end
if op == 'mulsub' then return w_submul(w_mul(a, b), c, d) end
if op == 'sum' then return w_sub(w_add(w_mul(a, b), w_of(c)), w_mul(d, 1)) end
if op == 'cmp' then return w_cmp(w_mul(a, b), w_mul(c, d)) end
if op == 'num' then return format('%d', w_num(w_add(w_of(a), w_of(b)))) end
if op == 'div' then
  local q, r = w_div(w_add(w_mul(a, b), w_of(c)), d)
  return { q, r }
end
`

const TWO53 = 2 ** 53

/** Integers below 2^53 with the edges first: 0, 1, around 2^24, 2^48, 2^53, 10^12, 10^15. */
const edge = fc.oneof(
  fc.constantFrom(
    0,
    1,
    2,
    2 ** 24 - 1,
    2 ** 24,
    2 ** 24 + 1,
    2 ** 48 - 1,
    2 ** 48,
    2 ** 50,
    2 ** 52,
    TWO53 - 2,
    TWO53 - 1,
    10 ** 12,
    10 ** 12 - 1,
    10 ** 15,
    31 * 86_400_000,
  ),
  fc.integer({ min: 0, max: 2 ** 30 }),
  fc.maxSafeNat(),
)

const run = (lua: string, ...args: (string | number)[]): Promise<unknown> =>
  redis.eval(lua, 0, ...args.map(String))

/** A reply of five limbs as the BigInt it holds (as @sluice/redis flat-outcome.ts reads it). */
function limbs(reply: unknown): bigint {
  expect(Array.isArray(reply) && reply.length === 5).toBe(true)
  let value = 0n
  for (let i = 4; i >= 0; i--) value = (value << 24n) + BigInt((reply as number[])[i])
  return value
}

describe('limbs (core limbs.lua.ts) on a real Redis equal BigInt', () => {
  test('products, sums and differences past 2^53 (carries, negative results)', async () => {
    await fc.assert(
      fc.asyncProperty(edge, edge, edge, edge, async (a, b, c, d) => {
        const [A, B, C, D] = [a, b, c, d].map(BigInt)
        expect(limbs(await run(HARNESS, 'mul', a, b))).toBe(A * B)
        expect(limbs(await run(HARNESS, 'muladd', a, b, c))).toBe(A * B + C)
        expect(limbs(await run(HARNESS, 'mulsub', a, b, c, d))).toBe(A * B - C * D)
        expect(limbs(await run(HARNESS, 'sum', a, b, c, d))).toBe(A * B + C - D)
        const order = A * B < C * D ? -1 : A * B > C * D ? 1 : 0
        expect(await run(HARNESS, 'cmp', a, b, c, d)).toBe(order)
      }),
      { numRuns: 300 },
    )
  })

  test('floor division with its remainder, the quotient below 2^53', async () => {
    await fc.assert(
      fc.asyncProperty(edge, edge, edge, async (q, d, extra) => {
        fc.pre(d > 0)
        // x = q x d + r with r below d: every quotient and remainder a step can meet.
        const r = extra % d
        const [Q, D, R] = [q, d, r].map(BigInt)
        expect(await run(HARNESS, 'div', q, d, r, d)).toEqual([q, r])
        // The same x divided by another divisor (the quotient kept below 2^53).
        const other = Math.max(1, Math.floor(d / 3) + 1)
        const x = Q * D + R
        fc.pre(x / BigInt(other) < BigInt(TWO53))
        const reply = (await run(HARNESS, 'div', q, d, r, other)) as number[]
        expect(reply.map(BigInt)).toEqual([x / BigInt(other), x % BigInt(other)])
      }),
      { numRuns: 300 },
    )
  })

  test('2^53 - 1, 2^53 and 2^53 + 1 in limbs, and a value back to a number below 2^53', async () => {
    for (const [a, b] of [
      [TWO53 - 1, 0],
      [TWO53 - 1, 1],
      [TWO53 - 1, 2],
    ]) {
      expect(limbs(await run(HARNESS, 'muladd', a, 1, b))).toBe(BigInt(a) + BigInt(b))
    }
    expect(await run(HARNESS, 'num', TWO53 - 2, 1)).toBe(String(TWO53 - 1))
    // (2^53 + 1) / 3 and 10^12 budgets a month: 10^12 x 31 d of backlog units over the limit.
    expect(await run(HARNESS, 'div', TWO53 - 1, 1, 2, 3)).toEqual([
      Number((2n ** 53n + 1n) / 3n),
      0,
    ])
    const month = 31 * 86_400_000
    expect(await run(HARNESS, 'div', 10 ** 12, month, 10 ** 12 - 1, 10 ** 12)).toEqual([
      month,
      10 ** 12 - 1,
    ])
  })
})

const MONTH = 31 * 86_400_000

describe('the wide script', () => {
  const keys = { n: 0 }
  const freshKey = (): string => `w${Date.now().toString(36)}${keys.n++}`

  /** Calls per command since the last CONFIG RESETSTAT, from INFO commandstats. */
  async function scriptCalls(): Promise<number> {
    const info = await redis.info('commandstats')
    let calls = 0
    for (const match of info.matchAll(/^cmdstat_(evalsha|eval):calls=(\d+)/gm)) {
      calls += Number(match[2])
    }
    return calls
  }

  test.each(['gcra', 'token-bucket', 'leaky-bucket'] as const)(
    'decides a wide %s (10^12 a month) in one script call, and beside a narrow limit',
    async (algorithm) => {
      const client = new Redis({ host: server.host, port: server.port })
      try {
        const store = new RedisStore({ client, time: 'client', batchSize: 1 })
        const month = { algorithm, limit: 10 ** 12, window: MONTH }
        const minute = { algorithm: 'gcra' as const, limit: 10 ** 9, window: 60_000 }
        const alone = createLimiter({ store, limits: [month] })
        const both = createLimiter({ store, limits: [minute, month] })
        expect(isWide(resolvePolicy(month))).toBe(true)
        await alone.consume(freshKey()) // the first call loads the script (EVAL)
        await both.consume(freshKey())
        await redis.config('RESETSTAT')
        const key = freshKey()
        for (let i = 0; i < 10; i++) {
          expect((await alone.consume(key, { cost: 10 ** 11 - 7 })).allowed).toBe(true)
        }
        // 70 left, and a few thousand more refilled while the test runs: not 10^9.
        expect((await alone.consume(key, { cost: 10 ** 9 })).allowed).toBe(false)
        for (let i = 0; i < 5; i++) await both.consume(freshKey(), { cost: 10 ** 8 })
        expect(await scriptCalls()).toBe(16)
      } finally {
        client.disconnect()
      }
    },
  )

  test('decides wide budgets on a packed store in one script call too', async () => {
    const client = new Redis({ host: server.host, port: server.port })
    try {
      const store = new RedisStore({ client, time: 'client', batchSize: 1, packed: { groups: 16 } })
      const limiter = createLimiter({
        store,
        limits: [
          { algorithm: 'gcra', limit: 10 ** 9, window: 60_000 },
          { algorithm: 'token-bucket', limit: 10 ** 12, window: MONTH },
        ],
      })
      await limiter.consume(freshKey())
      await redis.config('RESETSTAT')
      const key = freshKey()
      for (let i = 0; i < 9; i++) {
        expect((await limiter.consume(key, { cost: 10 ** 8 })).allowed).toBe(true)
      }
      expect((await limiter.consume(key, { cost: 2 * 10 ** 8 })).allowed).toBe(false)
      expect(await scriptCalls()).toBe(10)
    } finally {
      client.disconnect()
    }
  })

  test('consumes of wide budgets join one batch when the store batches', async () => {
    const client = new Redis({ host: server.host, port: server.port })
    try {
      const store = new RedisStore({ client, time: 'client', batchSize: 64 })
      const limiter = createLimiter({
        store,
        limits: [{ algorithm: 'gcra', limit: 10 ** 12, window: MONTH }],
      })
      await limiter.consume(freshKey())
      await redis.config('RESETSTAT')
      const decisions = await Promise.all(
        Array.from({ length: 200 }, (_, i) =>
          limiter.consume(`batch:${i % 50}`, { cost: 10 ** 9 }),
        ),
      )
      expect(decisions.every((d) => d.allowed)).toBe(true)
      const calls = await scriptCalls()
      expect(calls).toBeGreaterThan(0)
      expect(calls).toBeLessThan(20)
    } finally {
      client.disconnect()
    }
  })

  test('reads and writes the text compare-and-set keeps in `:v` keys (core state vectors)', async () => {
    const client = new Redis({ host: server.host, port: server.port })
    try {
      const store = new RedisStore({ client, time: 'client', prefix: 'wv' })
      for (const algorithm of ['gcra', 'token-bucket', 'leaky-bucket'] as const) {
        const policy: Policy = resolvePolicy({
          algorithm,
          limit: 10 ** 12 - 1,
          burst: 2 * 10 ** 12 + 3,
          window: MONTH,
        })
        const transitions = algorithmOf(policy)
        const state = new Array<number>(transitions.slots(policy)).fill(0)
        const stateKey = `wv:{${algorithm}}:${policyKeyId(policy)}:v`
        let now = 5_000_000
        // As compare-and-set left it: core's transitions, the vector joined by commas.
        transitions.apply(state, 0, now, policy, 7 * 10 ** 11 + 13)
        await redis.set(stateKey, state.join(','), 'PX', 60_000)
        for (const [dt, cost] of [
          [1000, 9 * 10 ** 11],
          [0, 6 * 10 ** 11],
          [86_400_000, 10 ** 11 + 1],
        ]) {
          now += dt
          const expected = { allowed: false, remaining: 0, resetMs: 0, retryAfterMs: 0, delayMs: 0 }
          transitions.decide(state, 0, now, policy, cost, expected)
          if (expected.allowed) transitions.apply(state, 0, now, policy, cost)
          const { outcomes } = await store.consume({
            key: algorithm,
            policies: [policy],
            cost,
            now,
          })
          expect(outcomes[0]).toEqual(expected)
          expect(await redis.get(stateKey)).toBe(state.join(','))
        }
      }
    } finally {
      client.disconnect()
    }
  })

  test('the wide script is one of the shared scripts, with its batch form', () => {
    expect(SCRIPTS.wide.lua).toContain('ALG.gcw')
    expect(SCRIPTS['wide:batch'].lua).toContain('ALG.tbw')
  })
})
