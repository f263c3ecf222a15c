/**
 * Owns telling which library made the client the user passed, and choosing its adapter.
 */
import { fromPgClient, fromPgPool } from './pg'
import { fromPostgresJs } from './postgres-js'
import type { SqlClient } from './types'

const has = (value: object, method: string): boolean =>
  typeof (value as Record<string, unknown>)[method] === 'function'

/**
 * The adapter for `client`, or undefined when it is none of the accepted clients. postgres.js's
 * `sql` is a function with `unsafe` and `begin`; a `pg` Pool or Client has `query` and
 * `connect`, a Pool also `totalCount`. Methods, not classes: two copies of a library still work.
 */
export function toSqlClient(client: unknown): SqlClient | undefined {
  if (typeof client === 'function' && has(client, 'unsafe') && has(client, 'begin')) {
    return fromPostgresJs(client as never)
  }
  if (typeof client !== 'object' || client === null) return undefined
  if (has(client, 'query') && has(client, 'connect')) {
    return 'totalCount' in client ? fromPgPool(client as never) : fromPgClient(client as never)
  }
  return undefined
}
