import { setTimeout as delay } from 'node:timers/promises'
import { createLimiter } from '@sluice/core'
import { MemcachedStore } from '@sluice/memcached'
import {
  startMemcached,
  type MemcachedServer,
  storeSettled,
  storeReached,
  latenciesWhileHung,
} from '@sluice/testkit'

// memcached hangs (SIGSTOP) with its connections open while requests flow, then resumes.
const TIMEOUT_MS = 100

let server: MemcachedServer

beforeAll(async () => {
  server = await startMemcached()
})

afterEach(() => server.resume())

afterAll(async () => {
  await server?.stop()
})

test('requests denied during a hang are not charged when memcached resumes (exact count)', async () => {
  const store = new MemcachedStore({ servers: server.servers })
  const settings = {
    store,
    algorithm: 'fixed-window',
    limit: 10,
    window: '1h',
    onStoreError: 'deny',
    breaker: { failures: 5, coolOffMs: 50 },
    logger: { warn: () => undefined },
  } as const
  const limiter = createLimiter({ ...settings, timeoutMs: TIMEOUT_MS })
  // Counts before and after the hang within a timeout no loaded machine reaches: a count
  // answered by onStoreError there would put the exact figure off.
  const patient = createLimiter({ ...settings, timeoutMs: 10_000 })
  const key = `hang:${Date.now()}`
  await storeReached(limiter, key)
  for (let i = 0; i < 2; i++) {
    expect(await patient.consume(key)).toMatchObject({ allowed: true, degraded: false })
  }

  server.pause()
  const during = await Promise.all(Array.from({ length: 20 }, () => limiter.consume(key)))
  expect(during.every((d) => d.degraded && !d.allowed)).toBe(true)
  server.resume()
  await storeSettled(store)
  await delay(100) // past the breaker's cool-off: the peek below goes to memcached
  expect(await patient.peek(key)).toMatchObject({ degraded: false, remaining: 8 })
  await store.close()
})

test('under load, every call to a hung memcached is answered within timeoutMs + 50 ms', async () => {
  const latencies = await latenciesWhileHung('memcached', server, 300)
  expect(latencies).toHaveLength(6000)
  expect(Math.min(...latencies)).toBeGreaterThanOrEqual(299)
  expect(Math.max(...latencies)).toBeLessThanOrEqual(350)
}, 30_000)
