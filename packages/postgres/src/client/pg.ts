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

/** A Pool or a Client: each emits 'error' when its connection dies while idle. */
interface PgEmitter extends PgQueryable {
  on?(event: 'error', listener: (error: Error) => void): unknown
  listenerCount?(event: 'error'): number
}

interface PgPool extends PgEmitter {
  connect(): Promise<PgPoolClient>
}

/**
 * Listens for 'error' where nothing else does: a connection the server closes while idle (a
 * restart, `pg_terminate_backend`, an idle timeout) emits it, and an 'error' event with no
 * listener would end the process. The store's next statement fails instead (onStoreError).
 */
function watchErrorsOf(emitter: PgEmitter): void {
  if ((emitter.listenerCount?.('error') ?? 1) === 0) emitter.on?.('error', () => undefined)
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
    watchErrors: () => watchErrorsOf(pool),
  }
}

/**
 * A single `pg.Client` runs one statement at a time in the order given: a transaction holds
 * the client, and the store's other statements wait for it (else they would run inside it).
 */
export function fromPgClient(client: PgEmitter): SqlClient {
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
    watchErrors: () => watchErrorsOf(client),
  }
}
