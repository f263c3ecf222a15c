import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { ConfigError, createLimiter, StoreError, type LimitOptions } from '@sluice/core'
import { resolvePolicy } from '@sluice/core/adapter'
import { PostgresStore } from '@sluice/postgres'
import {
  expectWholeMsBlocks,
  firstOfEachAdmitted,
  LONE_SURROGATE_KEYS,
  startPostgres,
  type PostgresServer,
} from '@sluice/testkit'
import { Client, Pool } from 'pg'
import postgres from 'postgres'
import { run } from '../src/cli'

let server: PostgresServer
let pool: Pool
const stores: PostgresStore[] = []

function storeOn(
  options: Partial<ConstructorParameters<typeof PostgresStore>[0]> = {},
): PostgresStore {
  const store = new PostgresStore({
    client: pool,
    time: 'client',
    sweepIntervalMs: false,
    ...options,
  })
  stores.push(store)
  return store
}

const policy = (options: Partial<LimitOptions> = {}) =>
  resolvePolicy({ algorithm: 'fixed-window', limit: 1, window: '1h', ...options })

function request(key: string, now = 1000, p = policy()) {
  return { key, policies: [p], cost: 1, now }
}

beforeAll(async () => {
  server = await startPostgres()
  pool = new Pool({ connectionString: server.url, max: 4 })
  await storeOn().migrate()
})

afterAll(async () => {
  for (const store of stores) await store.close()
  await pool?.end()
  await server?.stop()
})

describe('options', () => {
  test('a client of no accepted library is refused, naming the option', () => {
    expect(() => new PostgresStore({ client: {} as never })).toThrow(ConfigError)
    expect(() => new PostgresStore({ client: {} as never })).toThrow(/`client` must be a pg Pool/)
    expect(() => new PostgresStore({ client: 'postgres://x' as never })).toThrow(/`client`/)
  })

  test('bad values name the option and the value', () => {
    expect(() => storeOn({ time: 'local' as never })).toThrow(
      /`time` must be 'server' or 'client'; got "local"/,
    )
    expect(() => storeOn({ table: '' })).toThrow(/`table` must be a non-empty name/)
    expect(() => storeOn({ batchSize: 0 })).toThrow(/`batchSize` must be a positive integer; got 0/)
    expect(() => storeOn({ tabel: 'x' } as never)).toThrow(
      'unknown option `tabel` for PostgresStore (value "x")',
    )
  })

  // Regression: a 30-day interval was accepted, and Node ran it every 1 ms; sweepRows past
  // Postgres's int failed every sweep, silently, so expired rows were never deleted.
  test('sweepIntervalMs past the longest timer and sweepRows past an int are refused', () => {
    const thirtyDays = 30 * 86_400_000
    expect(() => storeOn({ sweepIntervalMs: thirtyDays })).toThrow(ConfigError)
    expect(() => storeOn({ sweepIntervalMs: thirtyDays })).toThrow(
      "`sweepIntervalMs` must be at most 2147483647 (about 24.8 days, Node's longest timer); " +
        'got 2592000000',
    )
    expect(() => storeOn({ sweepRows: 2 ** 31 })).toThrow(ConfigError)
    expect(() => storeOn({ sweepRows: 2 ** 31 })).toThrow(
      "`sweepRows` must be at most 2147483647 (Postgres's largest int); got 2147483648",
    )
    // The bounds themselves are taken.
    expect(() => storeOn({ sweepIntervalMs: 2 ** 31 - 1, sweepRows: 2 ** 31 - 1 })).not.toThrow()
  })

  test('sweepRows at its bound: the sweep runs, and deletes', async () => {
    const store = storeOn({ table: 'bounded_sweep', sweepRows: 2 ** 31 - 1 })
    await store.migrate()
    await store.consume(request('k', 1000))
    // Its row expires at the end of its window (3,600,000): past it, the sweep deletes it.
    await store.consume(request('later', 4_000_000))
    expect(await store.sweep()).toBe(1)
  })
})

describe('the table', () => {
  test('a missing table fails the first call with an error naming migrate()', async () => {
    const store = storeOn({ table: 'never_made' })
    const call = store.consume(request('k'))
    await expect(call).rejects.toThrow(StoreError)
    await expect(store.consume(request('k'))).rejects.toThrow(
      /"never_made" does not exist: create it with store\.migrate\(\)/,
    )
    // The limiter answers it by onStoreError.
    const limiter = createLimiter({
      store,
      limit: 1,
      window: '1h',
      onStoreError: 'deny',
      logger: { warn: () => undefined },
    })
    expect(await limiter.consume('k')).toMatchObject({ allowed: false, degraded: true })
  })

  test('a table of another shape is refused, naming the column', async () => {
    await pool.query(
      'CREATE TABLE other_shape (key bytea PRIMARY KEY, state text, expires_at bigint)',
    )
    const store = storeOn({ table: 'other_shape' })
    await expect(store.consume(request('k'))).rejects.toThrow(
      /column "state" of "public"."other_shape" is text, expected bytea/,
    )
    await expect(store.migrate()).rejects.toThrow(/column "state"/)
    await pool.query('CREATE TABLE no_expiry (key bytea PRIMARY KEY, state bytea)')
    await expect(storeOn({ table: 'no_expiry' }).migrate()).rejects.toThrow(
      /no column "expires_at"/,
    )
  })

  test('migrate is idempotent, quotes names, and makes UNLOGGED tables when asked', async () => {
    await pool.query('CREATE SCHEMA "odd ""schema"""')
    const store = storeOn({ schema: 'odd "schema"', table: 'limits; DROP TABLE x', unlogged: true })
    await store.migrate()
    await store.migrate()
    const { rows } = await pool.query(
      `SELECT relpersistence FROM pg_class WHERE relname = 'limits; DROP TABLE x'`,
    )
    expect(rows).toEqual([{ relpersistence: 'u' }])
    expect((await store.consume(request('k'))).outcomes[0].allowed).toBe(true)
    expect((await store.consume(request('k'))).outcomes[0].allowed).toBe(false)
  })

  test('expired rows are never read as live, and the sweep deletes them in bounded statements', async () => {
    const store = storeOn({ table: 'swept', sweepRows: 100 })
    await store.migrate()
    await store.consume(request('live', 1000))
    await pool.query(`UPDATE "swept" SET expires_at = 500`)
    // The row says full, but it expired at 500: read as empty.
    expect((await store.consume(request('live', 1000))).outcomes[0].allowed).toBe(true)
    await pool.query(
      `INSERT INTO "swept" SELECT decode(md5(i::text), 'hex'), '\\x'::bytea, 900 FROM generate_series(1, 250) i`,
    )
    const deleted: number[] = []
    const counting = new Pool({ connectionString: server.url, max: 1 })
    const query = counting.query.bind(counting) as (
      ...args: unknown[]
    ) => Promise<{ rows: { n?: number }[] }>
    ;(counting as unknown as { query: unknown }).query = async (...args: unknown[]) => {
      const result = await query(...args)
      if (typeof result.rows[0]?.n === 'number') deleted.push(result.rows[0].n)
      return result
    }
    const sweeper = new PostgresStore({
      client: counting,
      table: 'swept',
      time: 'client',
      sweepRows: 100,
      sweepIntervalMs: false,
    })
    await sweeper.consume(request('other', 1000))
    expect(await sweeper.sweep()).toBe(250)
    expect(deleted).toEqual([100, 100, 50])
    const { rows } = await pool.query(`SELECT count(*)::int AS n FROM "swept"`)
    expect(rows[0].n).toBe(2)
    await sweeper.close()
    await counting.end()
  })
})

test('with a sweep every window, the table holds at most about twice the live keys', async () => {
  const store = storeOn({ table: 'churn' })
  await store.migrate()
  // gcra, 1 a second: a key's row expires 1 s after its request. 10 new keys every 100 ms, so
  // 100 are live at any time; the sweep runs once a second.
  const gcra = policy({ algorithm: 'gcra', window: '1s' })
  const rows = async () =>
    (await pool.query(`SELECT count(*)::int AS n FROM churn`)).rows[0].n as number
  let most = 0
  for (let step = 1; step <= 50; step++) {
    const now = step * 100
    await Promise.all(
      Array.from({ length: 10 }, (_, i) => store.consume(request(`c:${step}:${i}`, now, gcra))),
    )
    most = Math.max(most, await rows())
    if (step % 10 === 0) await store.sweep()
  }
  expect(most).toBeGreaterThan(100)
  expect(most).toBeLessThanOrEqual(200)
})

test('keys that differ only in lone halves of UTF-16 pairs are buckets of their own', async () => {
  const limiter = createLimiter({ limit: 1, window: '1h', store: storeOn() })
  expect(await firstOfEachAdmitted(limiter)).toEqual(LONE_SURROGATE_KEYS.map(() => true))
})

test('keys with quotes, NUL or 10 KB each get their own bucket; the SQL never sees them', async () => {
  const store = storeOn({ table: 'hostile' })
  await store.migrate()
  const keys = [
    "a'b",
    'a"b',
    'a\u0000b',
    'a',
    'a\u0000',
    "'); DROP TABLE hostile; --",
    'x'.repeat(10_240),
    `${'x'.repeat(10_240)}y`,
  ]
  for (const key of keys) expect((await store.consume(request(key))).outcomes[0].allowed).toBe(true)
  for (const key of keys)
    expect((await store.consume(request(key))).outcomes[0].allowed).toBe(false)
  const { rows } = await pool.query(
    `SELECT count(*)::int AS n, max(length(key))::int AS longest FROM hostile`,
  )
  // Long keys are hashed (core's boundKey): no row key grows with the client key.
  expect(rows[0]).toEqual({ n: keys.length, longest: expect.any(Number) })
  expect(rows[0].longest).toBeLessThan(320)
})

describe('a user who cannot write', () => {
  beforeAll(async () => {
    await pool.query(`CREATE ROLE reader LOGIN`)
    await pool.query(`GRANT SELECT ON sluice_limits TO reader`)
    await pool.query(`CREATE ROLE standby LOGIN`)
    await pool.query(`ALTER ROLE standby SET default_transaction_read_only = on`)
    await pool.query(`GRANT ALL ON sluice_limits TO standby`)
  })

  test('without rights: a clear error at migrate() and at first use, then onStoreError', async () => {
    const reader = new Pool({ connectionString: server.url.replace('sluice@', 'reader@'), max: 1 })
    const store = new PostgresStore({ client: reader, sweepIntervalMs: false })
    await expect(store.migrate()).rejects.toThrow(
      /needs SELECT, INSERT, UPDATE and DELETE on "public"."sluice_limits"/,
    )
    await expect(store.consume(request('k'))).rejects.toThrow(
      /needs SELECT, INSERT, UPDATE and DELETE/,
    )
    const limiter = createLimiter({
      store,
      limit: 1,
      window: '1h',
      onStoreError: 'allow',
      logger: { warn: () => undefined },
    })
    expect(await limiter.consume('k')).toMatchObject({ allowed: true, degraded: true })
    await store.close()
    await reader.end()
  })

  test('on a read-only server (a standby): a clear error at migrate() and at first use', async () => {
    const standby = new Pool({
      connectionString: server.url.replace('sluice@', 'standby@'),
      max: 1,
    })
    const store = new PostgresStore({ client: standby, table: 'not_yet', sweepIntervalMs: false })
    await expect(store.migrate()).rejects.toThrow(
      /could not create "public"."not_yet": cannot execute CREATE TABLE in a read-only transaction/,
    )
    const existing = new PostgresStore({ client: standby, sweepIntervalMs: false })
    await expect(existing.consume(request('k'))).rejects.toThrow(
      /the server is read-only \(a standby\?\)/,
    )
    await store.close()
    await existing.close()
    await standby.end()
  })
})

test('time: server decides on the database clock, whatever the limiter clock says', async () => {
  const store = storeOn({ time: 'server' })
  // sliding-log: a window from the first request, so no boundary falls between the two calls.
  const limiter = createLimiter({
    store,
    algorithm: 'sliding-log',
    limit: 1,
    window: 300,
    clock: () => 0,
  })
  const key = `server-time:${Date.now()}`
  expect((await limiter.consume(key)).allowed).toBe(true)
  expect((await limiter.consume(key)).allowed).toBe(false)
  await new Promise((resolve) => setTimeout(resolve, 320))
  // The limiter's clock stood still; the database's moved past the window.
  expect((await limiter.consume(key)).allowed).toBe(true)
})

test('blocks of a fraction of a ms, and past 2^53, on a fractional clock: stored, and nothing else fails', async () => {
  for (const time of ['client', 'server'] as const)
    await expectWholeMsBlocks(storeOn({ time }), time)
})

test('a single pg Client and postgres.js work as a Pool does', async () => {
  const client = new Client({ connectionString: server.url })
  await client.connect()
  const sql = postgres(server.url, { max: 2, onnotice: () => undefined })
  for (const [name, connection] of [
    ['client', client],
    ['postgres.js', sql],
  ] as const) {
    const store = new PostgresStore({ client: connection, time: 'client', sweepIntervalMs: false })
    const limiter = createLimiter({ store, limit: 3, window: '1h' })
    const decisions = await Promise.all(Array.from({ length: 5 }, () => limiter.consume(name)))
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false, false])
    await store.close()
  }
  await client.end()
  await sql.end()
})

describe('sluice postgres migrate', () => {
  const io = () => {
    const out: string[] = []
    const err: string[] = []
    return {
      out,
      err,
      io: { out: (t: string) => void out.push(t), err: (t: string) => void err.push(t) },
    }
  }

  test('creates the table, idempotently', async () => {
    const first = io()
    expect(await run(['migrate', '--url', server.url, '--table', 'from_cli'], first.io)).toBe(0)
    expect(first.out).toEqual(['public.from_cli is ready'])
    expect(await run(['migrate', '--url', server.url, '--table', 'from_cli'], io().io)).toBe(0)
    const { rows } = await pool.query(`SELECT to_regclass('from_cli') IS NOT NULL AS made`)
    expect(rows[0].made).toBe(true)
  })

  test("core's `sluice` runs it as `sluice postgres` (the built @sluice/postgres/cli)", async () => {
    const root = join(__dirname, '../../..')
    const cli = ['-r', 'ts-node/register/transpile-only', 'packages/cli/src/cli.ts']
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [...cli, 'postgres', 'migrate', '--url', server.url, '--table', 'via_core'],
      { cwd: root },
    )
    expect(stdout).toBe('public.via_core is ready\n')
    const { rows } = await pool.query(`SELECT to_regclass('via_core') IS NOT NULL AS made`)
    expect(rows[0].made).toBe(true)
  })

  test('usage errors exit 2, failures 1 with the reason', async () => {
    const bad = io()
    expect(await run(['migrate'], bad.io)).toBe(2)
    expect(bad.err[0]).toMatch(/usage: sluice postgres migrate --url/)
    const failed = io()
    const url = server.url.replace('sluice@', 'reader@')
    expect(await run(['migrate', '--url', url, '--table', 'denied'], failed.io)).toBe(1)
    expect(failed.err[0]).toMatch(
      /sluice postgres migrate: PostgresStore.migrate\(\) could not create "public"."denied": permission denied/,
    )
  })
})
