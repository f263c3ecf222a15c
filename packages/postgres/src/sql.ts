/**
 * Owns the SQL PostgresStore sends: identifiers quoted, every value a text parameter (never
 * interpolated), lists as text arrays of hex. The decisions are not here: core's transitions
 * run in the store on the rows these statements read and write (see batch.ts).
 */

/** `"name"`, with `"` doubled: any string is a safe identifier once quoted. */
export function quoteIdentifier(name: string): string {
  return `"${name.replace(/"/g, '""')}"`
}

/** The database's clock in ms since the epoch (a whole number), for `time: 'server'`. */
export const SERVER_NOW = 'floor(extract(epoch FROM clock_timestamp()) * 1000)::float8'

/** A text array literal of `values` (hex or digits: nothing to escape), for `$n::text[]`. */
export function textArray(values: readonly string[]): string {
  return `{${values.map((value) => `"${value}"`).join(',')}}`
}

/** The statements of one table, built once per store. */
export interface Statements {
  /** $1 keys (hex): the database's `now` in the first row, then one row per key present. */
  readonly read: string
  /**
   * $1 keys, $2 states (hex), $3 expiries (ms), $4 versions read (xmin; '' = no row), $5 count:
   * writes every row whose version is still the one read, inserts those that had none, and
   * fails the whole statement (division by zero, code 22012) unless all of them were written.
   * Give it rows to update or rows to insert, never both (runner.ts says why).
   */
  readonly write: string
  /**
   * $1 keys: creates the missing ones empty (expired), in key order, and returns each row it
   * created (hex key, version); a row another writer created meanwhile is not returned.
   */
  readonly ensure: string
  /**
   * $1 keys: locks them (in key order) and reads them, then one more row with the database's
   * `now`, read once every lock is held (also when none of the rows exists).
   */
  readonly lock: string
  /** $1 now (ms; 0 with server time), $2 most rows: deletes expired rows. */
  readonly sweep: string
  /** $1 the qualified name: the table's columns. */
  readonly columns: string
  /** $1 the qualified name: whether the database is read-only, and this user's rights on it. */
  readonly access: string
}

const KEYS = `ARRAY(SELECT decode(x, 'hex') FROM unnest($1::text[]) AS x)`

export function statements(table: string, serverTime: boolean): Statements {
  // $1 is the limiter's latest `now`; with server time it is 0 and the database's clock decides.
  const expiredBefore = `greatest(${serverTime ? SERVER_NOW : '0'}, $1::float8)`
  return {
    read:
      `SELECT ${SERVER_NOW} AS now, NULL AS k, NULL::bytea AS s, NULL::float8 AS e, NULL AS v ` +
      `UNION ALL SELECT NULL, encode(key, 'hex'), state, expires_at::float8, xmin::text ` +
      `FROM ${table} WHERE key = ANY (${KEYS})`,
    write:
      `WITH input AS (SELECT decode(k, 'hex') AS key, decode(s, 'hex') AS state, ` +
      `e::bigint AS expires_at, NULLIF(v, '') AS version ` +
      `FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS i(k, s, e, v)), ` +
      // Rows another writer holds are skipped, not waited for: that is a conflict anyway, and
      // waiting here, holding the rows locked so far, could close a cycle of waits.
      `locked AS (SELECT t.key FROM ${table} t JOIN input i ON t.key = i.key ` +
      `AND t.xmin::text = i.version FOR UPDATE OF t SKIP LOCKED), ` +
      `updated AS (UPDATE ${table} t SET state = i.state, expires_at = i.expires_at ` +
      `FROM input i WHERE t.key = i.key AND t.key IN (SELECT key FROM locked) RETURNING 1), ` +
      `inserted AS (INSERT INTO ${table} (key, state, expires_at) ` +
      `SELECT key, state, expires_at FROM input WHERE version IS NULL ORDER BY key ` +
      `ON CONFLICT DO NOTHING RETURNING 1) ` +
      `SELECT 1 / ((SELECT count(*) FROM updated) + (SELECT count(*) FROM inserted) ` +
      `= $5::int)::int AS ok`,
    ensure:
      `INSERT INTO ${table} (key, state, expires_at) ` +
      `SELECT k, '\\x'::bytea, 0 FROM unnest(${KEYS}) AS k ORDER BY k ON CONFLICT DO NOTHING ` +
      `RETURNING encode(key, 'hex') AS k, xmin::text AS v`,
    // The `now` row comes last: UNION ALL runs its branches in order, so it is read after the
    // lock of every row, never before a wait for one.
    lock:
      `WITH locked AS (SELECT key, state, expires_at, xmin::text AS version FROM ${table} ` +
      `WHERE key = ANY (${KEYS}) ORDER BY key FOR UPDATE) ` +
      `SELECT NULL::float8 AS now, encode(key, 'hex') AS k, state AS s, ` +
      `expires_at::float8 AS e, version AS v FROM locked ` +
      `UNION ALL SELECT ${SERVER_NOW}, NULL, NULL, NULL, NULL`,
    sweep:
      `WITH gone AS (DELETE FROM ${table} WHERE key IN (SELECT key FROM ${table} ` +
      `WHERE expires_at <= ${expiredBefore} LIMIT $2::int FOR UPDATE SKIP LOCKED) RETURNING 1) ` +
      `SELECT count(*)::int AS n FROM gone`,
    columns:
      `SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type, ` +
      `EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = a.attrelid AND i.indisunique ` +
      `AND i.indnatts = 1 AND i.indkey[0] = a.attnum) AS "unique" ` +
      `FROM pg_attribute a WHERE a.attrelid = to_regclass($1::text) AND a.attnum > 0 ` +
      `AND NOT a.attisdropped`,
    access:
      `SELECT pg_is_in_recovery() OR current_setting('transaction_read_only') = 'on' AS "readOnly", ` +
      `has_table_privilege($1::text, 'SELECT') AND has_table_privilege($1::text, 'INSERT') ` +
      `AND has_table_privilege($1::text, 'UPDATE') AND has_table_privilege($1::text, 'DELETE') ` +
      `AS "rights"`,
  }
}

/** CREATE [UNLOGGED] TABLE IF NOT EXISTS: the one table every PostgresStore on it shares. */
export function createTable(table: string, unlogged: boolean): string {
  return (
    `CREATE ${unlogged ? 'UNLOGGED ' : ''}TABLE IF NOT EXISTS ${table} ` +
    `(key bytea PRIMARY KEY, state bytea NOT NULL, expires_at bigint NOT NULL)`
  )
}
