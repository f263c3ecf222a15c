import { PostgresStore, type PostgresStoreOptions } from '@sluice/postgres'
import { describeStoreConformance, startPostgres } from '@sluice/testkit'
import { Pool } from 'pg'

// The same cases as MemoryStore, RedisStore and MemcachedStore, on a real PostgreSQL server,
// with the limiter's clock deciding (time: 'client').
function conformance(name: string, options: Omit<PostgresStoreOptions, 'client'>): void {
  describeStoreConformance(`PostgresStore (${name})`, async () => {
    const server = await startPostgres()
    const pool = new Pool({ connectionString: server.url, max: 8 })
    const store = new PostgresStore({ client: pool, time: 'client', ...options })
    await store.migrate()
    return {
      store,
      close: async () => {
        await store.close()
        await pool.end()
        await server.stop()
      },
    }
  })
}

conformance('pg Pool, batched', {})
