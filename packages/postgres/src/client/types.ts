/**
 * Owns the one interface PostgresStore talks to Postgres through, whichever library made the
 * client (adapters: pg.ts, postgres-js.ts; which one: detect.ts), and the shapes it accepts.
 */

/** A row as both libraries return it: column name to value (bytea: Buffer, text: string). */
export type Row = Record<string, unknown>

/** Parameters are text (or null): every statement casts them itself, so both libraries agree. */
export type Params = readonly (string | null)[]

/** Runs one statement; `name` asks for a prepared statement where the library supports it. */
export type Query = (text: string, params: Params, name?: string) => Promise<Row[]>

/** What PostgresStore needs from a client. */
export interface SqlClient {
  /** The library that made the client, for messages. */
  readonly library: 'pg' | 'postgres'
  readonly query: Query
  /** Runs `work` inside BEGIN ... COMMIT on one connection (ROLLBACK when it throws). */
  transaction<T>(work: (query: Query) => Promise<T>): Promise<T>
  /** Keeps a pool's idle-connection errors (a restarted server) from crashing the process. */
  watchErrors?(): void
}

/** Any function: the shapes below only say which methods a client has. */
type Method = (...args: never[]) => unknown

/** A `pg` (node-postgres) `Pool` or `Client`. A pool is told apart by `totalCount`. */
export interface PgLikeClient {
  query: Method
  connect: Method
}

/** A `postgres` (postgres.js) instance: the tagged-template function `sql`. */
export interface PostgresJsLike {
  (...args: never[]): unknown
  unsafe: Method
  begin: Method
}

/** A client PostgresStore accepts (see PostgresStoreOptions.client). */
export type PostgresClientLike = PgLikeClient | PostgresJsLike
