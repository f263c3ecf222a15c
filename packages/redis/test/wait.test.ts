import { createLimiter, type Decision } from '@sluice/core'
import { RedisStore } from '@sluice/redis'
import { startRedis, type RedisServer } from '@sluice/testkit'
import { Redis } from 'ioredis'

// limiter.wait against Redis on Redis's own clock (TIME): the reservations are made in the Lua
// script, so concurrent waiters, even from several limiters, are released at the policy's pace.

let server: RedisServer
let client: Redis

beforeAll(async () => {
  server = await startRedis()
  client = new Redis({ host: server.host, port: server.port, maxRetriesPerRequest: 1 })
})

afterAll(async () => {
  client?.disconnect()
  await server?.stop()
})

let n = 0
const freshKey = () => `wait${Date.now().toString(36)}${n++}`

describe('wait on RedisStore', () => {
  test('N concurrent waiters from two limiters are released at the pace, in order, none early', async () => {
    const store = new RedisStore({ client })
    // 20 a second, burst 1: one release every 50 ms. Two limiters, one store: one schedule.
    const options = { algorithm: 'gcra' as const, limit: 20, window: 1000, burst: 1, store }
    const limiters = [createLimiter(options), createLimiter(options)]
    const key = freshKey()
    const waiters = 8
    const started = performance.now()
    const releases: Array<{ at: number; decision: Decision }> = []
    await Promise.all(
      Array.from({ length: waiters }, (_, i) =>
        limiters[i % 2].wait(key, { maxWaitMs: 1000 }).then((decision) => {
          releases.push({ at: performance.now() - started, decision })
        }),
      ),
    )
    expect(releases.every((r) => r.decision.allowed)).toBe(true)
    // Each waiter got its own slot: delays differ, and (Redis's clock moved little between the
    // calls) the k-th slot is k x 50 ms out, give or take the spread of the calls.
    const delays = releases.map((r) => r.decision.delayMs)
    expect(new Set(delays).size).toBe(waiters)
    expect(delays).toEqual([...delays].sort((a, b) => a - b))
    for (let k = 0; k < waiters; k++) {
      // None early: the k-th release comes no sooner than k slots after the start.
      expect(releases[k].at).toBeGreaterThanOrEqual(k * 50 - 2)
    }
    expect(delays[waiters - 1]).toBeGreaterThanOrEqual((waiters - 1) * 50 - 20)
  })

  test('a wait beyond maxWaitMs is refused at once and takes nothing; abort gives back', async () => {
    const store = new RedisStore({ client })
    const limiter = createLimiter({ algorithm: 'gcra', limit: 10, window: 1000, burst: 1, store })
    const key = freshKey()
    expect((await limiter.wait(key, { maxWaitMs: 0 })).allowed).toBe(true)
    const refused = await limiter.wait(key, { maxWaitMs: 20 })
    expect(refused.allowed).toBe(false)
    // Aborted while held: its slot (about 100 ms out) goes back...
    const controller = new AbortController()
    const held = limiter.wait(key, { maxWaitMs: 500, signal: controller.signal })
    setTimeout(() => controller.abort(new Error('gone')), 10)
    await expect(held).rejects.toThrow('gone')
    // ...so the next waiter gets that slot, not the one after it (about 200 ms out).
    const next = await limiter.wait(key, { maxWaitMs: 500 })
    expect(next.allowed).toBe(true)
    expect(next.delayMs).toBeLessThanOrEqual(100)
  })
})
