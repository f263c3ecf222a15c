import { setTimeout as delay } from 'node:timers/promises'
import { createLimiter, StoreError, storeHealth, type Decision, type Limiter } from '@sluice/core'
import { RedisStore, type RedisClientLike } from '@sluice/redis'
import {
  connectRedis,
  latenciesWhileHung,
  REDIS_LIBRARIES,
  startRedis,
  storeSettled,
  type LibraryClient,
  type RedisLibrary,
  type RedisServer,
} from '@sluice/testkit'

// Redis hangs (SIGSTOP) with its connections open while requests flow, then resumes (SIGCONT)
// and runs every command that queued meanwhile. What the limiter answered without it must not
// be charged, the breaker must stop the waiting, and the calls out must stay bounded: with
// every client library.
const TIMEOUT_MS = 100
/** The breaker's cool-off in these tests, short so that a read after a hang can wait it out. */
const COOL_OFF_MS = 50

let server: RedisServer
const clients: LibraryClient[] = []

beforeAll(async () => {
  server = await startRedis()
})

afterEach(() => server.resume())

afterAll(async () => {
  for (const { close } of clients) await close()
  await server?.stop()
})

/** A token bucket of 10 an hour: no refill inside a test, so counts are exact whatever the clock. */
function limiterOn(store: RedisStore, extra: Record<string, unknown> = {}) {
  const lines: string[] = []
  const limiter = createLimiter({
    store,
    algorithm: 'token-bucket',
    limit: 10,
    window: '1h',
    timeoutMs: TIMEOUT_MS,
    onStoreError: 'deny',
    breaker: { failures: 5, coolOffMs: COOL_OFF_MS },
    logger: { warn: (line: string) => lines.push(line) },
    ...extra,
  })
  return { limiter, lines }
}

/**
 * The charges made before a hang, through a limiter of the same policy whose calls have time to
 * finish: under a loaded test run a setup call past TIMEOUT_MS would be answered without Redis
 * and refunded, and the exact count after the hang would be off by it. Returns that limiter,
 * for the count read after the hang.
 */
async function chargeBeforeHang(
  store: RedisStore,
  extra: Record<string, unknown>,
  key: string,
  times: number,
  cost = 1,
): Promise<Limiter> {
  const { limiter } = limiterOn(store, { ...extra, timeoutMs: 10_000 })
  for (let i = 0; i < times; i++) {
    expect(await limiter.consume(key, { cost })).toMatchObject({ allowed: true, degraded: false })
  }
  return limiter
}

/**
 * The count Redis holds once a hang is over, read by `patient` (see chargeBeforeHang). The late
 * replies' refunds go under TIMEOUT_MS too: on a loaded machine all of them may answer past it,
 * and the breaker stays open. The read waits out its cool-off, so it goes to Redis as the probe.
 */
async function countAfterHang(store: RedisStore, patient: Limiter, key: string): Promise<Decision> {
  await storeSettled(store)
  await delay(COOL_OFF_MS + 10)
  return patient.peek(key)
}

async function client(library: RedisLibrary): Promise<RedisClientLike> {
  const connected = await connectRedis(library, server.url)
  clients.push(connected)
  return connected.client
}

describe.each(REDIS_LIBRARIES)('%s', (library) => {
  test('requests denied during a hang are not charged when Redis resumes (token bucket, exact count)', async () => {
    const store = new RedisStore({ client: await client(library), blockCache: false })
    const { limiter } = limiterOn(store)
    const key = `hang:${Date.now()}`
    const patient = await chargeBeforeHang(store, {}, key, 2)

    server.pause()
    const during = await Promise.all(Array.from({ length: 30 }, () => limiter.consume(key)))
    expect(during.every((d) => d.degraded && !d.allowed)).toBe(true)
    server.resume()
    // Redis now runs the 30 queued consumes and admits 8 of them; each is refunded.
    expect(await countAfterHang(store, patient, key)).toMatchObject({
      degraded: false,
      remaining: 8,
    })
  })

  test('a wide budget (past 2^50, its own script) charges nothing it answered during a hang', async () => {
    // 10^12 tokens a month, spent 10^11 at a time; the clock stands still, so nothing refills.
    const store = new RedisStore({
      client: await client(library),
      blockCache: false,
      time: 'client',
    })
    const wide = { limit: 1e12, window: '30d', clock: () => 1_800_000_000_000 }
    const { limiter } = limiterOn(store, wide)
    const cost = 1e11
    const key = `hang-wide:${Date.now()}`
    const patient = await chargeBeforeHang(store, wide, key, 2, cost)

    server.pause()
    const during = await Promise.all(
      Array.from({ length: 30 }, () => limiter.consume(key, { cost })),
    )
    expect(during.every((d) => d.degraded && !d.allowed)).toBe(true)
    server.resume()
    // Redis now runs the 30 queued consumes and admits 8 of them; each is refunded.
    expect(await countAfterHang(store, patient, key)).toMatchObject({
      degraded: false,
      remaining: 8e11,
    })
  })

  test("with 'allow', requests passed during a hang do not count afterwards either", async () => {
    const store = new RedisStore({ client: await client(library), blockCache: false })
    const { limiter } = limiterOn(store, { onStoreError: 'allow' })
    const key = `hang-allow:${Date.now()}`
    const patient = await chargeBeforeHang(store, {}, key, 1)

    server.pause()
    const during = await Promise.all(Array.from({ length: 12 }, () => limiter.consume(key)))
    expect(during.every((d) => d.degraded && d.allowed)).toBe(true)
    server.resume()
    expect(await countAfterHang(store, patient, key)).toMatchObject({
      degraded: false,
      remaining: 9,
    })
  })

  test('the breaker opens after `failures` timeouts, answers at once while open, and a probe closes it', async () => {
    const store = new RedisStore({ client: await client(library), blockCache: false })
    const { limiter, lines } = limiterOn(store, { breaker: { failures: 3, coolOffMs: 200 } })
    const key = `breaker:${Date.now()}`
    await limiter.consume(key)

    server.pause()
    const waits: number[] = []
    const answers: Decision[] = []
    for (let i = 0; i < 8; i++) {
      const started = performance.now()
      answers.push(await limiter.consume(key))
      waits.push(performance.now() - started)
    }
    expect(answers.every((d) => d.degraded && !d.allowed)).toBe(true)
    // Three calls were sent and timed out; the five after them were answered without sending.
    expect(waits.slice(0, 3).every((ms) => ms >= TIMEOUT_MS - 5)).toBe(true)
    expect(waits.slice(3).every((ms) => ms < TIMEOUT_MS / 2)).toBe(true)
    expect(storeHealth(store)).toMatchObject({ state: 'open', inFlight: 3, failing: true })
    expect(storeHealth(store)?.answeredWithout).toBe(8)

    server.resume()
    await storeSettled(store)
    // Still open until the cool-off ends: no call goes, the request is answered without Redis.
    await delay(250)
    const probe = await limiter.consume(key)
    expect(probe).toMatchObject({ degraded: false, allowed: true, remaining: 8 })
    expect(storeHealth(store)).toMatchObject({ state: 'closed', failuresInRow: 0, failing: false })
    expect(lines).toHaveLength(3)
    expect(lines[0]).toMatch(
      /^\[sluice\] RedisStore is failing \(.*timeoutMs.*\); answering with onStoreError 'deny' until it recovers$/,
    )
    expect(lines[1]).toBe(
      '[sluice] RedisStore: circuit breaker open after 3 failures in a row; probing again every 200 ms',
    )
    expect(lines[2]).toMatch(
      /^\[sluice\] RedisStore recovered after [\d.]+ s; 8 requests were answered without it$/,
    )
  })

  test('a failed probe opens the breaker again; only one probe goes at a time', async () => {
    const store = new RedisStore({ client: await client(library), blockCache: false })
    const { limiter } = limiterOn(store, { breaker: { failures: 1, coolOffMs: 50 } })
    const key = `probe:${Date.now()}`
    server.pause()
    await limiter.consume(key) // opens
    await delay(60)
    // Half-open: of three requests at once, one is the probe and two are answered at once.
    const started = performance.now()
    const times = await Promise.all(
      [0, 1, 2].map(() => limiter.consume(key).then(() => performance.now() - started)),
    )
    expect(times.filter((ms) => ms >= TIMEOUT_MS - 5)).toHaveLength(1)
    expect(storeHealth(store)).toMatchObject({ state: 'open', inFlight: 2 })
    server.resume()
    await storeSettled(store)
    await delay(60)
    expect(await limiter.consume(key)).toMatchObject({ degraded: false, remaining: 9 })
  })

  test('calls out to a hung store are bounded by maxInFlight; the rest fail at once with ERR_SLUICE_STORE_BUSY', async () => {
    const store = new RedisStore({ client: await client(library), blockCache: false })
    const { limiter } = limiterOn(store, {
      onStoreError: 'throw',
      breaker: false,
      maxInFlight: 10,
    })
    const key = `bound:${Date.now()}`
    server.pause()
    const errors = await Promise.all(
      Array.from({ length: 50 }, () =>
        limiter.consume(key).then(
          () => undefined,
          (error: unknown) => error as StoreError,
        ),
      ),
    )
    const codes = errors.map((e) => e?.code)
    expect(codes.filter((c) => c === 'ERR_SLUICE_STORE_BUSY')).toHaveLength(40)
    expect(codes.filter((c) => c === 'ERR_SLUICE_STORE_TIMEOUT')).toHaveLength(10)
    expect(storeHealth(store)?.inFlight).toBe(10)
    server.resume()
    await storeSettled(store)
    // The ten that went were admitted late and refunded; the forty were never sent.
    expect(await limiter.peek(key)).toMatchObject({ degraded: false, remaining: 10 })
  })
})

test('under load, every call to a hung Redis is answered within timeoutMs + 50 ms', async () => {
  const latencies = await latenciesWhileHung('redis', server, 300)
  expect(latencies).toHaveLength(6000)
  expect(Math.min(...latencies)).toBeGreaterThanOrEqual(299)
  expect(Math.max(...latencies)).toBeLessThanOrEqual(350)
}, 30_000)
