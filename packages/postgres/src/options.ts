/**
 * Owns PostgresStore's options: their documentation and defaults, checked and resolved once
 * into the settings the store reads.
 */
import { ConfigError } from '@sluice/core'
import { invalidOption } from '@sluice/core/adapter'
import { toSqlClient } from './client/detect'
import type { PostgresClientLike, SqlClient } from './client/types'
import { quoteIdentifier } from './sql'

export interface PostgresStoreOptions {
  /**
   * A `pg` Pool (or Client), or a `postgres` (postgres.js) instance, that you own: the store
   * never ends it. A Pool is best: batches run side by side on its connections.
   */
  client: PostgresClientLike
  /**
   * The table every decision reads and writes, created by `store.migrate()` (or
   * `sluice postgres migrate`), never at request time.
   * @default 'sluice_limits'
   */
  table?: string
  /**
   * The schema of `table`.
   * @default 'public'
   */
  schema?: string
  /**
   * Whose clock decides. `'server'`: the database's `clock_timestamp()`, read in the same
   * statement as the rows, so app servers with skewed clocks still agree. `'client'`: the
   * limiter's `now` (its `clock` option).
   * @default 'server'
   */
  time?: 'server' | 'client'
  /**
   * Most operations sent in one batch (one read and one write statement for all of them).
   * `1`: every operation alone.
   * @default 256
   */
  batchSize?: number
  /**
   * Most batches out at once (each holds one connection while its statements run).
   * @default 4
   */
  concurrency?: number
  /**
   * Compare-and-set attempts of a batch before it runs once more in a transaction that locks
   * its rows (`SELECT ... FOR UPDATE`): each lost attempt means another process changed one of
   * its rows between the read and the write. `0`: always lock.
   * @default 2
   */
  casAttempts?: number
  /**
   * How often expired rows are deleted, in ms (an `unref`ed timer); `false`: never (sweep
   * yourself with `store.sweep()`).
   * @default 60_000
   */
  sweepIntervalMs?: number | false
  /**
   * Most rows one sweep statement deletes: each statement is short, so it never holds many
   * row locks for long. A sweep repeats it until fewer expired rows are left.
   * @default 1000
   */
  sweepRows?: number
  /**
   * `migrate()` creates the table `UNLOGGED`: no write-ahead log, so writes cost less, but the
   * table is emptied after a crash of the server (not after a clean restart) and is not
   * replicated to standbys.
   * @default false
   */
  unlogged?: boolean
}

/** PostgresStoreOptions resolved: what the store reads. */
export interface PostgresSettings {
  readonly client: SqlClient
  /** `"schema"."table"`, quoted. */
  readonly table: string
  readonly serverTime: boolean
  readonly batchSize: number
  readonly concurrency: number
  readonly casAttempts: number
  readonly sweepIntervalMs: number | false
  readonly sweepRows: number
  readonly unlogged: boolean
}

const KNOWN: ReadonlySet<string> = new Set([
  'client',
  'table',
  'schema',
  'time',
  'batchSize',
  'concurrency',
  'casAttempts',
  'sweepIntervalMs',
  'sweepRows',
  'unlogged',
])

function identifier(value: unknown, option: string): string {
  // 63 bytes is Postgres's limit; a longer name would be cut silently.
  if (typeof value !== 'string' || value === '' || value.includes('\u0000')) {
    invalidOption(option, value, 'a non-empty name without NUL')
  }
  if (Buffer.byteLength(value) > 63) invalidOption(option, value, 'at most 63 bytes')
  return quoteIdentifier(value)
}

function positiveInteger(value: unknown, option: string, min = 1): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) {
    invalidOption(option, value, min === 0 ? 'an integer, 0 or more' : 'a positive integer')
  }
  return value
}

/** Checks every option (a ConfigError names the first bad one) and applies the defaults. */
export function resolvePostgresOptions(options: PostgresStoreOptions): PostgresSettings {
  if (options === null || typeof options !== 'object') {
    invalidOption('options', options, 'an object with `client`')
  }
  for (const name of Object.keys(options)) {
    if (!KNOWN.has(name)) throw new ConfigError(`PostgresStore has no option \`${name}\``)
  }
  const client = toSqlClient(options.client)
  if (client === undefined) {
    invalidOption('client', options.client, 'a pg Pool or Client, or a postgres (postgres.js) sql')
  }
  const time = options.time ?? 'server'
  if (time !== 'server' && time !== 'client') invalidOption('time', time, "'server' or 'client'")
  const sweepIntervalMs = options.sweepIntervalMs ?? 60_000
  if (sweepIntervalMs !== false) positiveInteger(sweepIntervalMs, 'sweepIntervalMs')
  const unlogged = options.unlogged ?? false
  if (typeof unlogged !== 'boolean') invalidOption('unlogged', unlogged, 'true or false')
  return {
    client,
    table: `${identifier(options.schema ?? 'public', 'schema')}.${identifier(options.table ?? 'sluice_limits', 'table')}`,
    serverTime: time === 'server',
    batchSize: positiveInteger(options.batchSize ?? 256, 'batchSize'),
    concurrency: positiveInteger(options.concurrency ?? 4, 'concurrency'),
    casAttempts: positiveInteger(options.casAttempts ?? 2, 'casAttempts', 0),
    sweepIntervalMs,
    sweepRows: positiveInteger(options.sweepRows ?? 1000, 'sweepRows'),
    unlogged,
  }
}
