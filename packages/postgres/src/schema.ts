/**
 * Owns the table's shape: creating it (`migrate`), and checking, before the first decision,
 * that it exists with the columns the store writes and that this user may use it.
 */
import type { SqlClient } from './client/types'
import { createTable, type Statements } from './sql'

/** The columns the store reads and writes, and their types as `format_type` names them. */
const COLUMNS: readonly (readonly [string, string])[] = [
  ['key', 'bytea'],
  ['state', 'bytea'],
  ['expires_at', 'bigint'],
]

/** Creates the table unless it exists (idempotent), then checks it as first use does. */
export async function migrate(
  client: SqlClient,
  sql: Statements,
  table: string,
  unlogged: boolean,
): Promise<void> {
  try {
    // Created only when missing: a user with rights on the table but not on its schema can
    // still run migrate() where the table exists.
    if ((await client.query(sql.columns, [table])).length === 0) {
      await client.query(createTable(table, unlogged), [])
    }
  } catch (error) {
    throw new Error(`PostgresStore.migrate() could not create ${table}: ${reasonOf(error)}`, {
      cause: error,
    })
  }
  await checkTable(client, sql, table)
}

/**
 * Throws an Error naming what is wrong: no table (run migrate), a column missing or of another
 * type, a read-only server, missing rights.
 */
export async function checkTable(client: SqlClient, sql: Statements, table: string): Promise<void> {
  const columns = await client.query(sql.columns, [table])
  if (columns.length === 0) {
    throw new Error(
      `table ${table} does not exist: create it with store.migrate() ` +
        '(or `sluice postgres migrate --url <url>`)',
    )
  }
  for (const [name, type] of COLUMNS) {
    const column = columns.find((c) => c.name === name)
    if (column === undefined) {
      throw new Error(`table ${table} has no column "${name}" (${type}): it is not a Sluice table`)
    }
    if (column.type !== type) {
      throw new Error(
        `column "${name}" of ${table} is ${String(column.type)}, expected ${type}: ` +
          'it is not a Sluice table',
      )
    }
  }
  if (columns.find((c) => c.name === 'key')?.unique !== true) {
    throw new Error(`column "key" of ${table} is not unique (it must be the primary key)`)
  }
  const [access] = await client.query(sql.access, [table])
  if (access.readOnly === true) {
    throw new Error(`the server is read-only (a standby?): PostgresStore writes to ${table}`)
  }
  if (access.rights !== true) {
    throw new Error(`this user needs SELECT, INSERT, UPDATE and DELETE on ${table}`)
  }
}

export function reasonOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
