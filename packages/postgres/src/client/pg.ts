/**
 * Owns the adapter for node-postgres (`pg`): a Pool (transactions on a checked-out client) or
 * a single Client (transactions serialized with every other statement of the store).
 */
import type { Params, Query, Row, SqlClient } from './types'

interface PgResult {
  rows: Row[]
}

interface PgQueryable {
  query(config: { text: string; values: Params; name?: string }): Promise<PgResult>
}

interface PgPoolClient extends PgQueryable {
  release(error?: Error | boolean): void
}

interface PgPool extends PgQueryable {
  connect(): Promise<PgPoolClient>
  on?(event: 'error', listener: (error: Error) => void): unknown
  listenerCount?(event: 'error'): number
}

function queryOf(target: PgQueryable): Query {
  return async (text, values, name) => (await target.query({ text, values, name })).rows
}

/** BEGIN, `work`, COMMIT on `target`; ROLLBACK (and the error) when `work` throws. */
async function inTransaction<T>(
  target: PgQueryable,
  work: (query: Query) => Promise<T>,
): Promise<T> {
  const query = queryOf(target)
  await query('BEGIN', [])
  try {
    const result = await work(query)
    await query('COMMIT', [])
    return result
  } catch (error) {
    await query('ROLLBACK', []).catch(() => undefined)
    throw error
  }
}

export function fromPgPool(pool: PgPool): SqlClient {
  return {
    library: 'pg',
    query: queryOf(pool),
    async transaction(work) {
      const client = await pool.connect()
      let broken: Error | undefined
      try {
        return await inTransaction(client, work)
      } catch (error) {
        // A connection that failed mid-transaction may be dead: the pool must not reuse it.
        broken = error instanceof Error ? error : new Error(String(error))
        throw error
      } finally {
        client.release(broken)
      }
    },
    watchErrors() {
      if ((pool.listenerCount?.('error') ?? 1) === 0) pool.on?.('error', () => undefined)
    },
  }
}

/**
 * A single `pg.Client` runs one statement at a time in the order given: a transaction holds
 * the client, and the store's other statements wait for it (else they would run inside it).
 */
export function fromPgClient(client: PgQueryable): SqlClient {
  const direct = queryOf(client)
  let held: Promise<unknown> = Promise.resolve()
  const after = <T>(run: () => Promise<T>): Promise<T> => {
    const result = held.then(run, run)
    held = result.catch(() => undefined)
    return result
  }
  return {
    library: 'pg',
    query: (text, values, name) => after(() => direct(text, values, name)),
    transaction: (work) => after(() => inTransaction(client, work)),
  }
}
