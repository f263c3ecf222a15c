import { setTimeout as delay } from 'node:timers/promises'
import { createLimiter } from '@sluice/core'
import { MemcachedStore } from '@sluice/memcached'
import { startMemcached, type MemcachedServer, storeSettled, latenciesOf } from '@sluice/testkit'

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
  const limiter = createLimiter({
    store,
    algorithm: 'fixed-window',
    limit: 10,
    window: '1h',
    timeoutMs: TIMEOUT_MS,
    onStoreError: 'deny',
    breaker: { failures: 5, coolOffMs: 50 },
    logger: { warn: () => undefined },
  })
  const key = `hang:${Date.now()}`
  await limiter.consume(key)
  await limiter.consume(key)

  server.pause()
  const during = await Promise.all(Array.from({ length: 20 }, () => limiter.consume(key)))
  expect(during.every((d) => d.degraded && !d.allowed)).toBe(true)
  server.resume()
  await storeSettled(store)
  await delay(100) // past the breaker's cool-off: the peek below goes to memcached
  expect(await limiter.peek(key)).toMatchObject({ degraded: false, remaining: 8 })
  await store.close()
})

test('under load, every call to a hung memcached is answered within timeoutMs + 50 ms', async () => {
  // 10,000 decisions a second (50 every 5 ms) for 0.6 s: 6,000 calls out, most timing out
  // while others are being sent. Each latency is measured from that call's start.
  const store = new MemcachedStore({ servers: server.servers })
  const limiter = createLimiter({
    store,
    limit: 10,
    window: '1h',
    timeoutMs: 300,
    onStoreError: 'deny',
    // Off, so that the warm-up round below (which runs the path once before it is timed) leaves
    // nothing open.
    breaker: false,
    maxInFlight: 10_000,
    logger: { warn: () => undefined },
  })
  await limiter.consume('load:warm')
  server.pause()
  await latenciesOf(500, (i) => limiter.consume(`load:${i}`))
  const latencies = await latenciesOf(6000, (i) => limiter.consume(`load:${i % 500}`), {
    perBatch: 50,
    gapMs: 5,
  })
  server.resume()
  const slowest = Math.max(...latencies)
  expect(Math.min(...latencies)).toBeGreaterThanOrEqual(299)
  expect(slowest).toBeLessThanOrEqual(350)
  await storeSettled(store)
  await store.close()
}, 30_000)
