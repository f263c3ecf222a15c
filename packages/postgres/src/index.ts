/**
 * The public entry of @sluice/postgres.
 */
export { PostgresStore } from './postgres-store'
export type { PostgresStoreOptions } from './postgres-store'
export type { PgLikeClient, PostgresClientLike, PostgresJsLike } from './client/types'
