/**
 * Owns PostgresStore: the Store contract on one Postgres table. Every call is an operation on
 * rows (pipeline.ts batches them), decided by core's transitions on the rows read, written back
 * by compare-and-set (runner.ts). Options: options.ts; SQL: sql.ts; the table: schema.ts.
 */
import {
  type Policy,
  type PolicyOutcome,
  type Store,
  type StoreBlock,
  type StoreRefund,
  type StoreRequest,
  type StoreResult,
} from '@sluice/core'
import { algorithmOf, invalidOption } from '@sluice/core/adapter'
import type { SqlClient } from './client/types'
import { storeError } from './errors'
import { resolvePostgresOptions, type PostgresStoreOptions } from './options'
import { Pipeline } from './pipeline'
import { blockRow, stateRow } from './rows'
import { BatchRunner, nameOf } from './runner'
import { checkTable, migrate } from './schema'
import { statements, type Statements } from './sql'
import type { RowView } from './view'

export type { PostgresStoreOptions } from './options'

/** Most statements one sweep runs (each deletes at most `sweepRows`). */
const SWEEP_STATEMENTS = 100

/** A blank outcome, filled by an algorithm's `decide`. */
function outcome(): PolicyOutcome {
  return { allowed: false, remaining: 0, resetMs: 0, retryAfterMs: 0, delayMs: 0 }
}

/** Every policy's outcome on the rows (block row first) as they stand at `now`; changes nothing. */
function decideAll(
  view: RowView,
  rows: readonly string[],
  policies: readonly Policy[],
  now: number,
  cost: number,
  maxDelayMs: number | undefined,
): PolicyOutcome[] {
  return policies.map((policy, i) => {
    const out = outcome()
    const state = view.state(rows[i + 1], policy, now)
    algorithmOf(policy).decide(state, 0, now, policy, cost, out, maxDelayMs)
    return out
  })
}

/**
 * Sluice's Store on PostgreSQL (`pg` or postgres.js): every algorithm, several limits per key
 * all-or-nothing, decided by core's transitions on rows of one table and written back with a
 * compare-and-set, so decisions equal MemoryStore's.
 */
export class PostgresStore implements Store {
  /** With server time decisions use the database's clock, not the request's `now`. */
  readonly ownClock: boolean
  private readonly client: SqlClient
  private readonly table: string
  private readonly sql: Statements
  private readonly unlogged: boolean
  private readonly sweepRows: number
  private readonly pipeline: Pipeline
  private checked: Promise<void> | undefined
  private sweeper: ReturnType<typeof setInterval> | undefined
  /** The latest request `now` seen: what a sweep with client time deletes before. */
  private latestNow = 0

  constructor(options: PostgresStoreOptions) {
    const settings = resolvePostgresOptions(options)
    this.client = settings.client
    this.table = settings.table
    this.ownClock = settings.serverTime
    this.unlogged = settings.unlogged
    this.sweepRows = settings.sweepRows
    this.sql = statements(settings.table, settings.serverTime)
    const runner = new BatchRunner(settings.client, this.sql, settings.casAttempts)
    this.pipeline = new Pipeline(
      async (batch) => {
        await this.ready()
        await runner.run(batch)
      },
      settings.batchSize,
      settings.concurrency,
    )
    this.client.watchErrors?.()
    if (settings.sweepIntervalMs !== false) {
      this.sweeper = setInterval(
        () => void this.sweep().catch(() => undefined),
        settings.sweepIntervalMs,
      )
      this.sweeper.unref()
    }
  }

  /**
   * Creates the table unless it exists (`CREATE TABLE IF NOT EXISTS`, `UNLOGGED` with
   * `unlogged: true`), then checks its shape. Idempotent; never run at request time.
   */
  async migrate(): Promise<void> {
    await migrate(this.client, this.sql, this.table, this.unlogged)
  }

  /** Deletes expired rows, at most `sweepRows` per statement; resolves to how many. */
  async sweep(): Promise<number> {
    let total = 0
    for (let i = 0; i < SWEEP_STATEMENTS; i++) {
      const [row] = await this.client.query(
        this.sql.sweep,
        [String(this.ownClock ? 0 : this.latestNow), String(this.sweepRows)],
        nameOf(this.sql.sweep),
      )
      const deleted = Number(row?.n ?? 0)
      total += deleted
      if (deleted < this.sweepRows) break
    }
    return total
  }

  consume(request: StoreRequest): Promise<StoreResult> {
    const { key, keys, policies, cost, maxDelayMs } = request
    const rows = this.rowsOf(key, policies, keys)
    return this.submit('consume', request.now, rows, (view, databaseNow) => {
      const now = this.ownClock ? databaseNow : request.now
      const blocked = this.blocked(view, rows[0], policies, now)
      if (blocked !== undefined) return { outcomes: blocked }
      const outcomes = decideAll(view, rows, policies, now, cost, maxDelayMs)
      if (cost === 0 || outcomes.some((o) => !o.allowed)) return { outcomes }
      for (const [i, policy] of policies.entries()) {
        algorithmOf(policy).apply(view.state(rows[i + 1], policy, now), 0, now, policy, cost)
        view.changed(rows[i + 1], policy)
      }
      // On the database's clock, say when the charge was made: a late reply's refund then
      // removes exactly it (a sliding log's timestamps, the same window).
      return this.ownClock ? { outcomes, at: now } : { outcomes }
    })
  }

  peek(request: StoreRequest): Promise<StoreResult> {
    const { key, keys, policies, cost, maxDelayMs } = request
    const rows = this.rowsOf(key, policies, keys)
    return this.submit('peek', request.now, rows, (view, databaseNow) => {
      const now = this.ownClock ? databaseNow : request.now
      const blocked = this.blocked(view, rows[0], policies, now)
      if (blocked !== undefined) return { outcomes: blocked }
      return { outcomes: decideAll(view, rows, policies, now, cost, maxDelayMs) }
    })
  }

  /** With `at`: a refund; without: a reward, from the newest usage. */
  async refund(request: StoreRefund): Promise<void> {
    const { key, keys, policies, cost, at } = request
    const rows = this.rowsOf(key, policies, keys)
    await this.submit('refund', request.now, rows, (view, databaseNow) => {
      // A refund of a charge this store reported (StoreRefund.storeClock) is already on the
      // database's clock: decided exactly there.
      const asGiven = !this.ownClock || request.storeClock === true
      const now = asGiven ? request.now : databaseNow
      // Otherwise at the same distance before the database's now as before the request's.
      const when = at === undefined || asGiven ? at : databaseNow - (request.now - at)
      for (const [i, policy] of policies.entries()) {
        if (!view.has(rows[i + 1], now)) continue
        algorithmOf(policy).refund(view.state(rows[i + 1], policy, now), 0, now, policy, cost, when)
        view.changed(rows[i + 1], policy)
      }
    })
  }

  /** Adds `cost` to every policy whatever the limit, never beyond full. */
  async penalize(request: StoreRequest): Promise<void> {
    const { key, keys, policies, cost } = request
    const rows = this.rowsOf(key, policies, keys)
    await this.submit('penalize', request.now, rows, (view, databaseNow) => {
      const now = this.ownClock ? databaseNow : request.now
      for (const [i, policy] of policies.entries()) {
        algorithmOf(policy).penalize(view.state(rows[i + 1], policy, now), 0, now, policy, cost)
        view.changed(rows[i + 1], policy)
      }
    })
  }

  /** A row of its own per key (`until` in its state and as its expiry), apart from the counters. */
  async block({ key, until, now: requestNow }: StoreBlock): Promise<void> {
    if (typeof key !== 'string') invalidOption('key', key, 'a string')
    const row = blockRow(key)
    await this.submit('block', requestNow, [row], (view, databaseNow) => {
      const now = this.ownClock ? databaseNow : requestNow
      // On the database's clock the block keeps its length from a request time that may hold
      // a fraction: whole ms again (a bigint), and never past 2^53 - 1 (a block for good).
      const end = this.ownClock
        ? Math.min(Math.ceil(databaseNow + (until - requestNow)), Number.MAX_SAFE_INTEGER)
        : until
      view.setBlock(row, end > now ? end : 0)
    })
  }

  async reset(key: string, policies: readonly Policy[], keys?: readonly string[]): Promise<void> {
    const rows = this.rowsOf(key, policies, keys)
    await this.submit('reset', 0, rows, (view) => {
      for (const row of rows) view.clear(row)
    })
  }

  /** Stops the sweep timer. The client is yours: the store never ends it. */
  close(): Promise<void> {
    if (this.sweeper !== undefined) clearInterval(this.sweeper)
    this.sweeper = undefined
    return Promise.resolve()
  }

  /** The block's row, then one row per policy. */
  private rowsOf(key: string, policies: readonly Policy[], keys?: readonly string[]): string[] {
    if (typeof key !== 'string') invalidOption('key', key, 'a string')
    return [blockRow(key), ...policies.map((policy, i) => stateRow(policy, key, keys?.[i]))]
  }

  /** Every policy's answer while the key's block holds at `now`; undefined when none does. */
  private blocked(
    view: RowView,
    row: string,
    policies: readonly Policy[],
    now: number,
  ): PolicyOutcome[] | undefined {
    const until = view.blockedUntil(row, now)
    if (until === 0) return undefined
    const wait = until - now
    return policies.map(() => ({
      allowed: false,
      remaining: 0,
      resetMs: wait,
      retryAfterMs: wait,
      delayMs: 0,
    }))
  }

  private submit<T>(
    operation: string,
    now: number,
    rows: readonly string[],
    run: (view: RowView, databaseNow: number) => T,
  ): Promise<T> {
    if (now > this.latestNow) this.latestNow = now
    return new Promise<T>((resolve, reject) => {
      this.pipeline.submit({
        rows,
        run,
        resolve: resolve as (value: unknown) => void,
        reject: (error) => reject(storeError(operation, error)),
      })
    })
  }

  /** The table's check, once; a failed check is tried again by the next call. */
  private ready(): Promise<void> {
    if (this.checked === undefined) {
      this.checked = checkTable(this.client, this.sql, this.table).catch((error: unknown) => {
        this.checked = undefined
        throw error
      })
    }
    return this.checked
  }
}
