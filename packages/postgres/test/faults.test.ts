import { setTimeout as delay } from 'node:timers/promises'
import {
  createLimiter,
  localTier,
  storeHealth,
  type Decision,
  type Limiter,
  type Store,
} from '@sluice/core'
import { PostgresStore } from '@sluice/postgres'
import {
  latenciesWhileHung,
  startPostgres,
  storeReached,
  storeSettled,
  watchStalls,
  type PostgresServer,
} from '@sluice/testkit'
import { Client, Pool } from 'pg'

// Postgres paused (SIGSTOP on every process of the server), restarted, a connection killed, a
// pool exhausted: every decision is answered (by onStoreError when the store cannot), and the
// count afterwards is exactly what the store's own decisions put there.
const TIMEOUT_MS = 100

let server: PostgresServer
let admin: Pool

beforeAll(async () => {
  server = await startPostgres()
  admin = new Pool({ connectionString: server.url, max: 1 })
  admin.on('error', () => undefined)
  await new PostgresStore({ client: admin, sweepIntervalMs: false }).migrate()
})

afterEach(() => server.resume())

afterAll(async () => {
  await admin?.end()
  await server?.stop()
})

/** A limiter on `store` answering by `'deny'` when the store cannot, within `timeoutMs`. */
function limiterOn(store: PostgresStore, limit: number, timeoutMs: number): Limiter {
  return createLimiter({
    store,
    algorithm: 'fixed-window',
    limit,
    window: '1h',
    timeoutMs,
    onStoreError: 'deny',
    breaker: { failures: 5, coolOffMs: 50 },
    logger: { warn: () => undefined },
  })
}

/**
 * A pool, a store on it, a limiter answering by `'deny'` when the store cannot, and a reader of
 * the same policy whose calls have time to finish: the count after a fault is read through it,
 * so that a loaded machine does not answer that read by onStoreError.
 */
function setUp(max = 4, limit = 10) {
  const pool = new Pool({ connectionString: server.url, max })
  const store = new PostgresStore({ client: pool })
  const limiter = limiterOn(store, limit, TIMEOUT_MS)
  return { pool, store, limiter, reader: limiterOn(store, limit, 10_000) }
}

/** What is left once every late reply and its refund have run. */
async function remainingAfterSettling(store: PostgresStore, reader: Limiter, key: string) {
  await storeSettled(store)
  await delay(100) // past the breaker's cool-off: the peek goes to Postgres
  return reader.peek(key)
}

/** Admitted by the store itself (not answered by onStoreError). */
const admittedByStore = (decisions: Decision[]) =>
  decisions.filter((d) => d.allowed && !d.degraded).length

test('requests denied during a pause are not charged when Postgres resumes (exact count)', async () => {
  const { pool, store, limiter, reader } = setUp()
  const key = `pause:${Date.now()}`
  await storeReached(limiter, key)
  expect(await pattern(reader, key, 2)).toBe('YY')

  server.pause()
  // Within the timeout, plus what a loaded machine took from the event loop meanwhile.
  const stalls = watchStalls()
  const started = Date.now()
  const during = await Promise.all(Array.from({ length: 20 }, () => limiter.consume(key)))
  expect(Date.now() - started).toBeLessThan(TIMEOUT_MS + 50 + stalls.stop())
  expect(during.every((d) => d.degraded && !d.allowed)).toBe(true)
  expect(storeHealth(store)?.state).toBe('open')
  server.resume()
  expect(await remainingAfterSettling(store, reader, key)).toMatchObject({
    degraded: false,
    remaining: 8,
  })
  expect(storeHealth(store)?.state).toBe('closed')
  await store.close()
  await pool.end()
})

/** Consumes `n` one after another and writes Y (admitted) or n (refused) for each. */
async function pattern(limiter: Limiter, key: string, n: number): Promise<string> {
  let out = ''
  for (let i = 0; i < n; i++) out += (await limiter.consume(key)).allowed ? 'Y' : 'n'
  return out
}

// On the database's clock a late charge happened at a time the app never saw: its refund must
// remove exactly that charge, whatever the algorithm keeps (a sliding log: one timestamp a unit).
describe.each([false, true])('database clock, local tier %s', (tiered) => {
  test.each(['sliding-log', 'sliding-window', 'fixed-window', 'token-bucket', 'gcra'] as const)(
    '%s: requests denied during a pause are never charged (exact count after)',
    async (algorithm) => {
      const pool = new Pool({ connectionString: server.url, max: 4 })
      const postgres = new PostgresStore({ client: pool, sweepIntervalMs: false })
      const store: Store = tiered ? localTier(postgres) : postgres
      const options = { algorithm, limit: 10, window: '1h' } as const
      const settings = {
        ...options,
        onStoreError: 'deny',
        breaker: false,
        logger: { warn: () => undefined },
      } as const
      const limiter = createLimiter({ store, ...settings, timeoutMs: TIMEOUT_MS })
      // Counts before and after the pause within a timeout no loaded machine reaches (see
      // setUp's reader).
      const patient = createLimiter({ store, ...settings, timeoutMs: 10_000 })
      const key = `late:${algorithm}:${String(tiered)}:${Date.now()}`
      await storeReached(limiter, key)
      expect(await pattern(patient, key, 3)).toBe('YYY')
      server.pause()
      const during = await Promise.all(Array.from({ length: 6 }, () => limiter.consume(key)))
      expect(during.every((d) => d.degraded && !d.allowed)).toBe(true)
      server.resume()
      await storeSettled(store)
      // The store admitted 3: 7 more pass, the 8th is refused.
      expect(await pattern(patient, key, 8)).toBe('YYYYYYYn')
      if (tiered) await (store as ReturnType<typeof localTier>).close()
      const direct = createLimiter({ store: postgres, ...options, breaker: false })
      expect((await direct.peek(key)).remaining).toBe(0)
      await postgres.close()
      await pool.end()
    },
  )
})

test('a restart mid-traffic: answered throughout, exactly the store-admitted requests counted', async () => {
  const { pool, store, limiter, reader } = setUp(4, 1000)
  pool.on('error', () => undefined)
  const key = `restart:${Date.now()}`
  const decisions: Promise<Decision>[] = []
  const traffic = setInterval(() => {
    for (let i = 0; i < 5; i++) decisions.push(limiter.consume(key))
  }, 5)
  await delay(50)
  await server.restart()
  await delay(200)
  clearInterval(traffic)
  const answered = await Promise.all(decisions)
  expect(answered.some((d) => d.degraded)).toBe(true)
  expect(answered.some((d) => !d.degraded)).toBe(true)
  expect(await remainingAfterSettling(store, reader, key)).toMatchObject({
    degraded: false,
    remaining: 1000 - admittedByStore(answered),
  })
  await store.close()
  await pool.end()
})

test('connections killed with pg_terminate_backend mid-traffic: exact count after', async () => {
  const { pool, store, limiter, reader } = setUp(4, 1000)
  const key = `terminate:${Date.now()}`
  const decisions: Promise<Decision>[] = []
  const traffic = setInterval(() => {
    for (let i = 0; i < 5; i++) decisions.push(limiter.consume(key))
  }, 2)
  await delay(50)
  const { rows } = await admin.query(
    `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity ` +
      `WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'`,
  )
  expect(rows[0].n).toBeGreaterThan(0)
  await delay(100)
  clearInterval(traffic)
  const answered = await Promise.all(decisions)
  expect(answered.filter((d) => !d.degraded).length).toBeGreaterThan(0)
  expect(await remainingAfterSettling(store, reader, key)).toMatchObject({
    degraded: false,
    remaining: 1000 - admittedByStore(answered),
  })
  await store.close()
  await pool.end()
})

test('a single pg Client whose idle connection the server ends: no crash, onStoreError answers', async () => {
  const client = new Client({ connectionString: server.url })
  await client.connect()
  const store = new PostgresStore({ client, sweepIntervalMs: false })
  const limiter = createLimiter({
    store,
    algorithm: 'fixed-window',
    limit: 10,
    window: '1h',
    onStoreError: 'deny',
    logger: { warn: () => undefined },
  })
  const key = `client-ended:${Date.now()}`
  expect(await limiter.consume(key)).toMatchObject({ allowed: true, degraded: false, remaining: 9 })
  const ended = new Promise((resolve) => client.once('end', resolve))
  const { rows } = await admin.query(
    `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity ` +
      `WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'`,
  )
  expect(rows[0].n).toBeGreaterThan(0)
  // Without the store's listener the 'error' of the idle connection ends the test process.
  await ended
  expect(await limiter.consume(key)).toMatchObject({ allowed: false, degraded: true })
  await store.close()
})

test('a pool exhausted by the app: answered by onStoreError in time, nothing charged later', async () => {
  const { pool, store, limiter, reader } = setUp(2)
  const key = `exhausted:${Date.now()}`
  await storeReached(limiter, key)
  expect(await pattern(reader, key, 1)).toBe('Y')
  const held = [await pool.connect(), await pool.connect()]
  // Within the timeout, plus what a loaded machine took from the event loop meanwhile.
  const stalls = watchStalls()
  const started = Date.now()
  const during = await Promise.all(Array.from({ length: 10 }, () => limiter.consume(key)))
  expect(Date.now() - started).toBeLessThan(TIMEOUT_MS + 50 + stalls.stop())
  expect(during.every((d) => d.degraded && !d.allowed)).toBe(true)
  for (const client of held) client.release()
  expect(await remainingAfterSettling(store, reader, key)).toMatchObject({
    degraded: false,
    remaining: 9,
  })
  await store.close()
  await pool.end()
})

test('under load, every call to a paused Postgres is answered within timeoutMs + 50 ms', async () => {
  const latencies = await latenciesWhileHung('postgres', server, 300)
  expect(latencies).toHaveLength(6000)
  expect(Math.min(...latencies)).toBeGreaterThanOrEqual(299)
  expect(Math.max(...latencies)).toBeLessThanOrEqual(350)
}, 30_000)
