import { createLimiter, type Limiter } from '@sluice/core'
import { PostgresStore, type PostgresStoreOptions } from '@sluice/postgres'
import { startPostgres, type PostgresServer } from '@sluice/testkit'
import { Pool, type PoolClient, type QueryConfig } from 'pg'

// Regression: the row-lock fallback deadlocked with other processes' compare-and-set writes. A
// locked batch created its missing rows (uncommitted) and then waited to lock a hot row, while a
// compare-and-set write held that hot row and waited for one of those uncommitted rows. Postgres
// broke each cycle after deadlock_timeout: calls stalled, and a locked batch failed whole
// ('deadlock detected'). Each store here has its own pool (its own connections, as separate app
// servers have).
const LIMITS = [
  { limit: 1000, window: '1h' },
  { limit: 2000, window: '2h' },
] as const
const LIMIT = LIMITS[0].limit
const APP = 'sluice-deadlock-test'

let server: PostgresServer
let admin: Pool
const pools: Pool[] = []
let tables = 0

beforeAll(async () => {
  // Short, so that a deadlock costs little time before the fix; the count of deadlocks is what
  // fails the test, however quickly Postgres breaks them.
  server = await startPostgres({ settings: { deadlock_timeout: '100ms' } })
  admin = new Pool({ connectionString: server.url, max: 1 })
}, 60_000)

afterAll(async () => {
  await Promise.all(pools.map((pool) => pool.end().catch(() => undefined)))
  // A pool's end resolves before its connections have closed: one still open when the server
  // stops would get the server's goodbye as an error no one listens to.
  if (admin !== undefined) await connectionsGone()
  await admin?.end()
  await server?.stop()
})

function poolOf(max = 4): Pool {
  const pool = new Pool({ connectionString: server.url, max, application_name: APP })
  pools.push(pool)
  return pool
}

/** A table of its own (created), so that a sweep or a count sees this test's rows only. */
async function freshTable(): Promise<string> {
  const table = `deadlock_${tables++}`
  await new PostgresStore({ client: admin, table, sweepIntervalMs: false }).migrate()
  return table
}

type Client = PostgresStoreOptions['client']

function limiterOn(client: Client, options: Partial<PostgresStoreOptions> = {}): Limiter {
  const store = new PostgresStore({ client, sweepIntervalMs: false, ...options })
  // Every failure surfaces: no breaker, and a timeout only so that a stuck call fails the test.
  return createLimiter({
    limits: [...LIMITS],
    store,
    onStoreError: 'throw',
    timeoutMs: 5000,
    breaker: false,
    logger: { warn: () => undefined },
  })
}

/** Deadlocks Postgres has detected in this database since it started. */
async function deadlocks(): Promise<number> {
  const { rows } = await admin.query<{ n: string }>(
    'SELECT deadlocks AS n FROM pg_stat_database WHERE datname = current_database()',
  )
  return Number(rows[0]?.n)
}

/** Until every connection of the test's pools has ended (each reports its statistics then). */
async function connectionsGone(): Promise<void> {
  for (;;) {
    const { rows } = await admin.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1',
      [APP],
    )
    if (rows[0]?.n === 0) return
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** Each call's error message, and how many times. */
function tally(messages: string[]): Record<string, number> {
  const counts: Record<string, number> = {}
  for (const message of messages) counts[message] = (counts[message] ?? 0) + 1
  return counts
}

describe('hot keys batched with fresh ones, from several stores', () => {
  const STORES = 4
  const ROUNDS = 12
  const CALLS = 40
  const HOT_KEYS = 3

  /** Store `s`'s `j`th key of `round`: a hot key every fifth call, else one fresh this round. */
  function keyOf(s: number, round: number, j: number): string {
    return j % 5 === 0 ? `hot${j % HOT_KEYS}` : `r${round}_${(j * (s + 1) * 7) % CALLS}`
  }

  // Half the stores always run under row locks (casAttempts 0), half after one lost race (1).
  test('row-lock batches and compare-and-set writes never deadlock; every count exact', async () => {
    const table = await freshTable()
    const before = await deadlocks()
    const own = Array.from({ length: STORES }, () => poolOf())
    const limiters = own.map((pool, s) =>
      limiterOn(pool, { table, casAttempts: s % 2, batchSize: 64 }),
    )
    const admitted = new Map<string, number>()
    const failures: string[] = []
    for (let round = 0; round < ROUNDS; round++) {
      const calls: Promise<void>[] = []
      for (const [s, limiter] of limiters.entries()) {
        for (let j = 0; j < CALLS; j++) {
          const key = keyOf(s, round, j)
          const call = limiter.consume(key).then(
            (decision) => {
              if (decision.allowed) admitted.set(key, (admitted.get(key) ?? 0) + 1)
              else failures.push('refused')
            },
            (error: Error) => void failures.push(error.message),
          )
          calls.push(call)
        }
      }
      await Promise.all(calls)
    }
    await Promise.all(own.map((pool) => pool.end()))
    await connectionsGone()

    expect(tally(failures)).toEqual({})
    expect((await deadlocks()) - before).toBe(0)
    const checker = limiterOn(admin, { table })
    for (const [key, count] of admitted) {
      expect([key, (await checker.peek(key)).remaining]).toEqual([key, LIMIT - count])
    }
    const total = [...admitted.values()].reduce((sum, n) => sum + n, 0)
    expect(total).toBe(STORES * ROUNDS * CALLS)
  })
})

/** `pool`, with `after(text, inTransaction)` run after each statement, before its answer. */
function interposed(pool: Pool, after: (text: string, inTransaction: boolean) => Promise<void>) {
  const run = async (target: Pool | PoolClient, config: QueryConfig, inTransaction: boolean) => {
    const result = await target.query(config)
    await after(config.text, inTransaction)
    return result
  }
  return {
    totalCount: 0,
    query: (config: QueryConfig) => run(pool, config, false),
    async connect() {
      const client = await pool.connect()
      return {
        query: (config: QueryConfig) => run(client, config, true),
        release: (error?: Error | boolean) => client.release(error),
      }
    },
  }
}

const isEnsure = (text: string): boolean => text.startsWith('INSERT')
/** The locked run's lock; the write and the sweep lock too, but skip locked rows. */
const isLock = (text: string): boolean =>
  text.includes('FOR UPDATE') && !text.includes('SKIP LOCKED')

describe('rows created or deleted by others between the steps', () => {
  test('a sweep deletes the rows a compare-and-set just created: it runs again, exact', async () => {
    const table = await freshTable()
    const sweeper = new PostgresStore({ client: admin, table, sweepIntervalMs: false })
    let swept = 0
    const client = interposed(poolOf(), async (text, inTransaction) => {
      if (isEnsure(text) && !inTransaction) swept += await sweeper.sweep()
    })
    const limiter = limiterOn(client, { table, casAttempts: 2 })
    await limiter.consume('hot')
    // The new rows beside an update are created empty (expired) first: the sweep deletes them
    // (2 keys x 2 limits) before the write, in each of the two attempts; the locked run then
    // creates its own, uncommitted, which no sweep can delete.
    const decisions = await Promise.all(['hot', 'new1', 'new2'].map((k) => limiter.consume(k)))
    expect(swept).toBe(8)
    expect(decisions.map((d) => [d.allowed, d.remaining])).toEqual([
      [true, LIMIT - 2],
      [true, LIMIT - 1],
      [true, LIMIT - 1],
    ])
    expect((await limiter.peek('new1')).remaining).toBe(LIMIT - 1)
  })

  test('another writer creates a row while a locked run holds the others: no wait, exact', async () => {
    const table = await freshTable()
    const other = limiterOn(poolOf(), { table })
    let interpose = true
    const otherCalls: Promise<unknown>[] = []
    // Right after the locked run locks 'hot' and finds no row for 'new', the other store writes
    // that row: an insert, which must not wait for the locked run (before the fix it waited for
    // the run's uncommitted row, and the run waited for it). The run then finds the row taken,
    // and runs again.
    const client = interposed(poolOf(), async (text) => {
      if (!isLock(text) || !interpose) return
      interpose = false
      const call = other.consume('new')
      otherCalls.push(call)
      await call
    })
    const limiter = limiterOn(client, { table, casAttempts: 0 })
    await other.consume('hot')
    const decisions = await Promise.all(['hot', 'new'].map((k) => limiter.consume(k)))
    await expect(Promise.all(otherCalls)).resolves.toHaveLength(1)
    expect(decisions.map((d) => [d.allowed, d.remaining])).toEqual([
      [true, LIMIT - 2],
      [true, LIMIT - 2],
    ])
    expect((await other.peek('new')).remaining).toBe(LIMIT - 2)
  })

  test('a peek under row locks on keys without rows: the database clock, and no row made', async () => {
    const table = await freshTable()
    const limiter = limiterOn(poolOf(), { table, casAttempts: 0 })
    const decision = await limiter.peek('nobody')
    expect(decision).toMatchObject({ allowed: true, remaining: LIMIT })
    expect(decision.resetMs).toBe(0)
    const { rows } = await admin.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)
    expect(rows[0]?.n).toBe(0)
  })
})
