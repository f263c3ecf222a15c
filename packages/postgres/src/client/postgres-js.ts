/**
 * Owns the adapter for postgres.js (`postgres`): `sql.unsafe` with prepared statements, and
 * `sql.begin` for transactions.
 */
import type { Params, Query, Row, SqlClient } from './types'

interface Unsafe {
  unsafe(text: string, params: Params, options: { prepare: boolean }): PromiseLike<Row[]>
}

interface PostgresJs extends Unsafe {
  begin<T>(work: (tx: Unsafe) => Promise<T>): Promise<T>
}

function queryOf(sql: Unsafe): Query {
  // Arrays-like results from postgres.js are real arrays; the statement text is the cache key.
  return async (text, params, name) => sql.unsafe(text, params, { prepare: name !== undefined })
}

export function fromPostgresJs(sql: PostgresJs): SqlClient {
  return {
    library: 'postgres',
    query: queryOf(sql),
    transaction: (work) => sql.begin((tx) => work(queryOf(tx))),
  }
}
