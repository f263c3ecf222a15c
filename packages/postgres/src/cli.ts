/**
 * Owns `sluice postgres migrate --url <url>`: creates the store's table from the command line,
 * as `store.migrate()` does (core's CLI loads this entry when the command is `postgres`).
 */
import { parseArgs } from 'node:util'
import { PostgresStore } from './postgres-store'

/** Where the command writes; core's CLI passes its own. */
export interface CliIo {
  out(text: string): void
  err(text: string): void
}

const USAGE =
  'usage: sluice postgres migrate --url <postgres://...> [--table sluice_limits] ' +
  '[--schema public] [--unlogged]'

interface Connection {
  client: unknown
  end(): Promise<void>
}

/** A `pg` client when pg is installed, else postgres.js; both are optional peers. */
async function connect(url: string): Promise<Connection> {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const pg = require('pg') as typeof import('pg')
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    return { client, end: () => client.end() }
  } catch (error) {
    if ((error as { code?: unknown }).code !== 'MODULE_NOT_FOUND') throw error
  }
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const postgres = require('postgres') as typeof import('postgres')
  const sql = postgres(url, { max: 1, onnotice: () => undefined })
  return { client: sql, end: () => sql.end() }
}

/** Runs `sluice postgres <args>`; resolves to the exit code. */
export async function run(args: readonly string[], io: CliIo): Promise<number> {
  let parsed
  try {
    parsed = parseArgs({
      args: [...args],
      allowPositionals: true,
      options: {
        url: { type: 'string' },
        table: { type: 'string' },
        schema: { type: 'string' },
        unlogged: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    })
  } catch (error) {
    io.err(`${(error as Error).message}\n${USAGE}`)
    return 2
  }
  const { values, positionals } = parsed
  if (values.help === true) {
    io.out(USAGE)
    return 0
  }
  if (positionals[0] !== 'migrate' || positionals.length !== 1 || values.url === undefined) {
    io.err(USAGE)
    return 2
  }
  try {
    io.out(await migrateTable({ ...values, url: values.url }))
    return 0
  } catch (error) {
    io.err(`sluice postgres migrate: ${(error as Error).message}`)
    return 1
  }
}

async function migrateTable(values: {
  url: string
  table?: string
  schema?: string
  unlogged?: boolean
}): Promise<string> {
  const connection = await connect(values.url)
  try {
    const store = new PostgresStore({
      client: connection.client as never,
      table: values.table,
      schema: values.schema,
      unlogged: values.unlogged,
      sweepIntervalMs: false,
    })
    await store.migrate()
    return `${values.schema ?? 'public'}.${values.table ?? 'sluice_limits'} is ready`
  } finally {
    await connection.end()
  }
}
