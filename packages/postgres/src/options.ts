/**
 * Owns PostgresStore's options: their documentation and defaults, checked and resolved once
 * into the settings the store reads.
 */
import {
  checkBoolean,
  checkOneOf,
  checkPositiveInteger,
  checkWholeNumber,
  declareOptions,
  invalidOption,
} from '@sluice/core/adapter'
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
   * How often expired rows are deleted, in ms (an `unref`ed timer), at most 2^31 - 1
   * (2147483647, about 24.8 days: Node's longest timer); `false`: never (sweep yourself with
   * `store.sweep()`).
   * @default 60_000
   */
  sweepIntervalMs?: number | false
  /**
   * Most rows one sweep statement deletes, at most 2^31 - 1 (2147483647, Postgres's largest
   * `int`): each statement is short, so it never holds many row locks for long. A sweep repeats
   * it until fewer expired rows are left.
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

/**
 * The longest delay `setInterval` keeps: Node runs a longer one every 1 ms instead (with a
 * TimeoutOverflowWarning).
 */
const MAX_TIMER_MS = 2 ** 31 - 1

/** Postgres's largest `int`: a sweep statement's row limit is one (`LIMIT $2::int`). */
const MAX_SQL_INT = 2 ** 31 - 1

/** Throws unless `value` is a positive integer of at most `max`, saying why that is the most. */
function checkUpTo(value: unknown, option: string, max: number, why: string): void {
  checkPositiveInteger(value, option)
  if ((value as number) > max) invalidOption(option, value, `at most ${max} (${why})`)
}

/** Throws unless `value` names a table or schema as Postgres keeps it, whole. */
function checkIdentifier(value: unknown, option: string): void {
  // 63 bytes is Postgres's limit; a longer name would be cut silently.
  if (typeof value !== 'string' || value === '' || value.includes('\u0000')) {
    invalidOption(option, value, 'a non-empty name without NUL')
  }
  if (Buffer.byteLength(value) > 63) invalidOption(option, value, 'at most 63 bytes')
}

/**
 * PostgresStore's options, declared once (in the order they are checked; `client` is checked
 * right after, by what it is made into). null takes the default, as it always has.
 */
export const POSTGRES_OPTIONS = declareOptions<PostgresStoreOptions>('PostgresStore', {
  client: { doc: 'a pg Pool or Client, or a postgres.js sql, that you own' },
  table: {
    doc: 'the table every decision reads and writes',
    default: 'sluice_limits',
    orNull: true,
    check: checkIdentifier,
  },
  schema: { doc: 'the schema of `table`', default: 'public', orNull: true, check: checkIdentifier },
  time: {
    doc: "whose clock decides: 'server' (the database's clock_timestamp()) or 'client'",
    default: 'server',
    orNull: true,
    check: (time, name) => checkOneOf(time, name, ['server', 'client']),
  },
  batchSize: {
    doc: 'most operations sent in one batch',
    default: 256,
    orNull: true,
    check: checkPositiveInteger,
  },
  concurrency: {
    doc: 'most batches out at once',
    default: 4,
    orNull: true,
    check: checkPositiveInteger,
  },
  casAttempts: {
    doc: 'compare-and-set attempts of a batch before it runs under row locks',
    default: 2,
    orNull: true,
    check: (count, name) => checkWholeNumber(count, name, 'an integer, 0 or more'),
  },
  sweepIntervalMs: {
    doc: 'how often expired rows are deleted (ms), or false',
    default: 60_000,
    orNull: true,
    check: (ms, name) =>
      ms === false || checkUpTo(ms, name, MAX_TIMER_MS, "about 24.8 days, Node's longest timer"),
  },
  sweepRows: {
    doc: 'most rows one sweep statement deletes',
    default: 1000,
    orNull: true,
    check: (rows, name) => checkUpTo(rows, name, MAX_SQL_INT, "Postgres's largest int"),
  },
  unlogged: {
    doc: 'migrate() creates the table UNLOGGED',
    default: false,
    orNull: true,
    check: checkBoolean,
  },
})

/** Checks every option (a ConfigError names the first bad one) and applies the defaults. */
export function resolvePostgresOptions(options: PostgresStoreOptions): PostgresSettings {
  if (options === null || typeof options !== 'object') {
    invalidOption('options', options, 'an object with `client`')
  }
  const given = POSTGRES_OPTIONS.resolve(options)
  const client = toSqlClient(given.client)
  if (client === undefined) {
    invalidOption('client', given.client, 'a pg Pool or Client, or a postgres (postgres.js) sql')
  }
  return {
    client,
    table: `${quoteIdentifier(given.schema!)}.${quoteIdentifier(given.table!)}`,
    serverTime: given.time === 'server',
    batchSize: given.batchSize!,
    concurrency: given.concurrency!,
    casAttempts: given.casAttempts!,
    sweepIntervalMs: given.sweepIntervalMs!,
    sweepRows: given.sweepRows!,
    unlogged: given.unlogged!,
  }
}
