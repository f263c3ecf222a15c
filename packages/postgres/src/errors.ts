/**
 * Owns the errors PostgresStore reports: a StoreError (so that the limiter's `onStoreError`
 * decides) whose message says what to do, for the causes a user can fix.
 */
import { ConfigError, StoreError } from '@sluice/core'
import { withoutStack } from '@sluice/core/adapter'
import { reasonOf } from './schema'

/** What to do about a Postgres error code a user can fix. */
const ADVICE: Readonly<Record<string, string>> = {
  '42P01': 'the table is gone: create it with store.migrate()',
  '25006': 'the server is read-only (a standby?): point the store at the primary',
  '42501': 'this user needs SELECT, INSERT, UPDATE and DELETE on the table',
  '53300': 'the server has no free connection slots',
}

export function storeError(operation: string, error: unknown): Error {
  if (error instanceof StoreError || error instanceof ConfigError) return error
  const code = (error as { code?: unknown } | null)?.code
  const advice = typeof code === 'string' ? ADVICE[code] : undefined
  const reason = advice === undefined ? reasonOf(error) : `${reasonOf(error)} (${advice})`
  // The cause keeps the client's stack; a hung server fails thousands of calls at once.
  return withoutStack(
    () => new StoreError(`PostgresStore ${operation} failed: ${reason}`, { cause: error }),
  )
}
