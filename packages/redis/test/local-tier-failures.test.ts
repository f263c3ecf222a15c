import { setTimeout as delay } from 'node:timers/promises'
import { createLimiter, localTier, type Decision } from '@sluice/core'
import { RedisStore } from '@sluice/redis'
import { startRedis, storeSettled, type RedisServer } from '@sluice/testkit'
import type { Redis } from 'ioredis'
import { failFastClient } from './clients'

// The local tier on a Redis that stalls (DEBUG SLEEP) while it holds a lease: it keeps
// answering from the lease, then the limiter's onStoreError answers; when Redis wakes and runs
// the commands that timed out, nothing is counted twice and nothing answered without Redis is
// counted at all.
let server: RedisServer
const clients: Redis[] = []

async function readyClient(): Promise<Redis> {
  const client = await failFastClient(server)
  clients.push(client)
  return client
}

beforeAll(async () => {
  server = await startRedis()
})

afterAll(async () => {
  for (const client of clients) client.disconnect()
  await server?.stop()
})

test('a stalled Redis: the lease answers, then onStoreError; the counts are exact when it wakes', async () => {
  const client = await readyClient()
  const admin = await readyClient()
  const tier = localTier(new RedisStore({ client }), { maxShare: 0.05 }) // L = 50
  // fixed-window from the key's first request: no window ends during the test.
  const options = {
    algorithm: 'fixed-window',
    anchor: 'first-request',
    limit: 1000,
    window: '1h',
  } as const
  const lines: string[] = []
  const limiter = createLimiter({
    ...options,
    store: tier,
    timeoutMs: 150,
    onStoreError: 'allow',
    logger: { warn: (line: string) => lines.push(line) },
  })
  const key = `tier-stall:${Date.now()}`
  const decisions: Decision[] = []
  // Leases of 1, 2, 4, 8, 16, 32 (63 units), then 50: 80 decisions leave 33 in the lease.
  for (let i = 0; i < 80; i++) decisions.push(await limiter.consume(key))
  expect(tier.stats().heldUnits).toBe(33)

  const sleeping = admin.call('DEBUG', 'SLEEP', '1')
  await delay(20)
  const during: Promise<Decision>[] = []
  for (let i = 0; i < 60; i++) {
    during.push(limiter.consume(key))
    await delay(5)
  }
  decisions.push(...(await Promise.all(during)))
  await sleeping
  await storeSettled(tier)
  for (let i = 0; i < 20; i++) decisions.push(await limiter.consume(key))
  await tier.close()

  const stalled = decisions.slice(80, 140)
  // The 33 units held answered the first 33 requests of the stall; onStoreError the rest.
  expect(stalled.map((d) => d.degraded)).toEqual([
    ...Array<boolean>(33).fill(false),
    ...Array<boolean>(27).fill(true),
  ])
  expect(decisions.every((d) => d.allowed)).toBe(true)
  // Redis counts exactly the requests it answered for, directly or through a lease.
  const answeredByRedis = decisions.filter((d) => !d.degraded).length
  expect(answeredByRedis).toBe(80 + 33 + 20)
  // The outage is logged once when it starts and once when it ends, with its count.
  expect(lines[0]).toMatch(
    /^\[sluice\] localTier\(RedisStore\) is failing \(store call took longer than timeoutMs/,
  )
  expect(lines[lines.length - 1]).toMatch(/; 27 requests were answered without it$/)
  const checker = createLimiter({ ...options, store: new RedisStore({ client: admin }) })
  expect((await checker.peek(key)).remaining).toBe(1000 - answeredByRedis)
}, 20_000)
