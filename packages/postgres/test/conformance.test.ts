import type { Store, StoreBlock, StoreRefund, StoreRequest } from '@sluice/core'
import { PostgresStore, type PostgresStoreOptions } from '@sluice/postgres'
import { describeStoreConformance, startPostgres, type PostgresServer } from '@sluice/testkit'
import { Pool } from 'pg'
import postgres from 'postgres'

// The same cases as MemoryStore, RedisStore and MemcachedStore, on a real PostgreSQL server.

type Connect = (server: PostgresServer) => {
  client: PostgresStoreOptions['client']
  end(): Promise<void>
}

const pgPool: Connect = (server) => {
  const pool = new Pool({ connectionString: server.url, max: 8 })
  return { client: pool, end: () => pool.end() }
}

const postgresJs: Connect = (server) => {
  const sql = postgres(server.url, { max: 8, onnotice: () => undefined })
  return { client: sql, end: () => sql.end() }
}

function conformance(
  name: string,
  connect: Connect,
  options: Omit<PostgresStoreOptions, 'client'>,
  traceRuns?: number,
): void {
  describeStoreConformance(
    `PostgresStore (${name})`,
    async () => {
      const server = await startPostgres()
      const { client, end } = connect(server)
      const store = new PostgresStore({ client, time: 'client', ...options })
      await store.migrate()
      return {
        store,
        close: async () => {
          await store.close()
          await end()
          await server.stop()
        },
      }
    },
    { traceRuns },
  )
}

// The operations of one event-loop turn in one read and one compare-and-set write.
conformance('pg Pool, batched', pgPool, {})
// Every operation alone, each in a transaction that locks its rows (the path a batch takes
// after losing casAttempts races).
conformance(
  'postgres.js, batchSize 1, casAttempts 0',
  postgresJs,
  {
    batchSize: 1,
    casAttempts: 0,
  },
  25,
)

/**
 * The database's clock (time: 'server'), set to each request's `now`: the connections put a
 * `clock_timestamp()` of their own before pg_catalog's on the search path, reading the time
 * from a table the wrapper below writes before forwarding each call.
 */
describeStoreConformance(
  'PostgresStore (pg Pool, batched, the database clock)',
  async () => {
    const server = await startPostgres()
    const setup = new Pool({ connectionString: server.url, max: 1 })
    setup.on('error', () => undefined)
    await setup.query('CREATE SCHEMA fake_clock')
    await setup.query('CREATE TABLE fake_clock.now (ms numeric NOT NULL)')
    await setup.query('INSERT INTO fake_clock.now VALUES (0)')
    await setup.query(
      'CREATE FUNCTION fake_clock.clock_timestamp() RETURNS timestamptz LANGUAGE sql VOLATILE ' +
        'AS $$ SELECT to_timestamp(ms / 1000) FROM fake_clock.now $$',
    )
    const pool = new Pool({
      connectionString: server.url,
      max: 8,
      options: '-c search_path=fake_clock,public,pg_catalog',
    })
    const inner = new PostgresStore({ client: pool })
    await inner.migrate()
    const at = async (now: number): Promise<void> => {
      await setup.query('UPDATE fake_clock.now SET ms = $1', [now])
    }
    const store: Store = {
      ownClock: true,
      consume: async (r: StoreRequest) => (await at(r.now), inner.consume(r)),
      peek: async (r: StoreRequest) => (await at(r.now), inner.peek(r)),
      refund: async (r: StoreRefund) => (await at(r.now), inner.refund(r)),
      penalize: async (r: StoreRequest) => (await at(r.now), inner.penalize(r)),
      block: async (r: StoreBlock) => (await at(r.now), inner.block(r)),
      reset: (key, policies, keys) => inner.reset(key, policies, keys),
    }
    return {
      store,
      close: async () => {
        await inner.close()
        await pool.end()
        await setup.end()
        await server.stop()
      },
    }
  },
  // One clock in the database cannot move between the calls of one batch, as the cases of
  // decisions made together do; their order is checked by the runs above.
  { ordered: [], traceRuns: 25 },
)
