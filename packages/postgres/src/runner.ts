/**
 * Owns running one batch atomically: read its rows, run its operations on them (core's
 * transitions, in order), write back every changed row in one compare-and-set statement that
 * writes all of them or none. A batch that lost the race to another writer runs again from a
 * fresh read; after `casAttempts` lost races it runs once more holding its rows' locks.
 *
 * No statement waits for another writer while holding what a writer may be waiting for. Such a
 * cycle (a locked batch holding a row it inserted, uncommitted, waiting to lock a hot row that a
 * compare-and-set holds while it waits to insert that same row) stalls both until Postgres
 * breaks it after `deadlock_timeout` (1 s) by failing one of them. So:
 * - a compare-and-set either updates rows, taking each one's lock without waiting (SKIP
 *   LOCKED), or inserts rows, in key order; never both in one statement. Rows it would insert
 *   beside updates are first created empty (expired) by `ensure`, a statement of its own;
 * - a locked run locks its rows in key order, then creates the missing rows it writes (`ensure`,
 *   in key order, before it updates any row), then only updates rows it holds.
 * The statements that wait are then inserts, waiting for an uncommitted insert, update or delete
 * of the same key, and locks, waiting for a row lock; each goes in key order. An insert's holder
 * either waits no more (an update, a sweep, a locked run past its inserts) or is an insert
 * waiting for a later key; a lock's holder may also be a lock waiting for a later key. No insert
 * waits for a lock holder that has not inserted or updated yet (a row lock alone does not hold
 * up an insert). So every chain of waits climbs in key order and ends: no cycle can close.
 */
import { createHash } from 'node:crypto'
import { StoreError } from '@sluice/core'
import { withoutStack } from '@sluice/core/adapter'
import type { Query, Row, SqlClient } from './client/types'
import type { Operation } from './pipeline'
import { encodeState } from './rows'
import { textArray, type Statements } from './sql'
import { RowView, type RowWrite, type StoredRow } from './view'

/** Error codes of a lost race: our compare-and-set (1 / 0), a deadlock, a serialization failure. */
const CONFLICTS: ReadonlySet<string> = new Set(['22012', '40P01', '40001'])

/**
 * Locked runs of a batch before it fails. A run is repeated only when another writer created
 * one of its rows meanwhile (that writer made progress), or after a deadlock or serialization
 * failure (of other transactions on the table: this store's own statements cannot deadlock).
 */
const LOCKED_ATTEMPTS = 5

interface Read {
  readonly rows: Map<string, StoredRow>
  readonly now: number
}

/** One run of a batch's operations on a view: what to write, and each operation's answer. */
interface Pass {
  readonly writes: RowWrite[]
  settle(): void
}

/** A prepared statement's name: the same text gets the same name on every connection. */
export function nameOf(text: string): string {
  return `sluice_${createHash('sha1').update(text).digest('hex').slice(0, 20)}`
}

function isConflict(error: unknown): boolean {
  return CONFLICTS.has((error as { code?: unknown } | null)?.code as string)
}

export class BatchRunner {
  private readonly names: Record<keyof Statements, string>

  constructor(
    private readonly client: SqlClient,
    private readonly sql: Statements,
    private readonly casAttempts: number,
  ) {
    this.names = Object.fromEntries(
      Object.entries(sql).map(([key, text]) => [key, nameOf(text)]),
    ) as Record<keyof Statements, string>
  }

  async run(batch: readonly Operation[]): Promise<void> {
    const keys = textArray(distinctRows(batch))
    for (let attempt = 0; attempt < this.casAttempts; attempt++) {
      const read = parseRead(await this.client.query(this.sql.read, [keys], this.names.read))
      const pass = apply(batch, read)
      if (await this.compareAndSet(pass.writes)) return pass.settle()
    }
    const pass = await this.runLocked(batch, keys)
    pass.settle()
  }

  /** Writes every row or none; false when another writer changed or created one first. */
  private async compareAndSet(writes: readonly RowWrite[]): Promise<boolean> {
    const query = this.client.query
    // Only inserts: one statement. Else the new rows are created first, and the write updates.
    if (writes.every((write) => write.version === '')) return this.write(query, writes)
    try {
      const versioned = await this.withRowsCreated(query, writes)
      return versioned !== undefined && (await this.write(query, versioned))
    } catch (error) {
      if (isConflict(error)) return false
      throw error
    }
  }

  /**
   * `writes`, each row that had none created empty first (committed with `query`'s
   * transaction): its version is then the created row's. An empty row reads as the absent one
   * did, so the decisions stand. Undefined when another writer created one of them since the
   * read: a lost race.
   */
  private async withRowsCreated(
    query: Query,
    writes: readonly RowWrite[],
  ): Promise<RowWrite[] | undefined> {
    const fresh = writes.filter((write) => write.version === '').map((write) => write.key)
    if (fresh.length === 0) return [...writes]
    const rows = await query(this.sql.ensure, [textArray(fresh)], this.names.ensure)
    const created = new Map(rows.map((row) => [row.k as string, row.v as string]))
    if (created.size < fresh.length) return undefined
    return writes.map((write) =>
      write.version === '' ? { ...write, version: created.get(write.key) ?? '' } : write,
    )
  }

  /** The batch in a transaction holding its rows' locks, which no other writer can change. */
  private async runLocked(batch: readonly Operation[], keys: string): Promise<Pass> {
    for (let attempt = 0; attempt < LOCKED_ATTEMPTS; attempt++) {
      const pass = await this.lockedAttempt(batch, keys)
      if (pass !== undefined) return pass
    }
    throw withoutStack(
      () =>
        new StoreError(
          `PostgresStore: the batch lost every one of its ${LOCKED_ATTEMPTS} locked runs ` +
            '(its rows created by other writers meanwhile, or deadlocks)',
        ),
    )
  }

  /** One locked run; undefined when it must run again (it wrote nothing). */
  private async lockedAttempt(
    batch: readonly Operation[],
    keys: string,
  ): Promise<Pass | undefined> {
    try {
      return await this.client.transaction((query) => this.underLocks(query, batch, keys))
    } catch (error) {
      // A second line of defence: a deadlock or a serialization failure rolled it all back.
      if (isConflict(error)) return undefined
      throw error
    }
  }

  private async underLocks(
    query: Query,
    batch: readonly Operation[],
    keys: string,
  ): Promise<Pass | undefined> {
    const read = parseRead(await query(this.sql.lock, [keys], this.names.lock))
    const pass = apply(batch, read)
    // Rows missing (new, or deleted by a sweep since) are created here, uncommitted so that no
    // sweep can delete them, and before any update. Undefined: the rows created so far commit
    // empty, which reads as absent.
    const writes = await this.withRowsCreated(query, pass.writes)
    if (writes === undefined) return undefined
    if (!(await this.write(query, writes))) {
      throw withoutStack(() => new StoreError('PostgresStore: rows changed while locked'))
    }
    return pass
  }

  /** Writes every row or none; false when another writer changed one since it was read. */
  private async write(query: Query, writes: readonly RowWrite[]): Promise<boolean> {
    if (writes.length === 0) return true
    const params = [
      textArray(writes.map((w) => w.key)),
      textArray(writes.map((w) => encodeState(w.state))),
      textArray(writes.map((w) => String(w.expiresAt))),
      textArray(writes.map((w) => w.version)),
      String(writes.length),
    ]
    try {
      await query(this.sql.write, params, this.names.write)
      return true
    } catch (error) {
      if (isConflict(error)) return false
      throw error
    }
  }
}

function distinctRows(batch: readonly Operation[]): string[] {
  const rows = new Set<string>()
  for (const operation of batch) for (const row of operation.rows) rows.add(row)
  return [...rows].sort()
}

/** Rows read (by hex key) and the database's `now`: the largest any row carries. */
function parseRead(result: readonly Row[]): Read {
  const rows = new Map<string, StoredRow>()
  let now = -Infinity
  for (const row of result) {
    if (typeof row.now === 'number' && row.now > now) now = row.now
    if (typeof row.k !== 'string') continue
    rows.set(row.k, {
      bytes: row.s as Uint8Array,
      expiresAt: Number(row.e),
      version: row.v as string,
    })
  }
  return { rows, now }
}

function apply(batch: readonly Operation[], read: Read): Pass {
  const view = new RowView(read.rows)
  const answers = batch.map((operation) => {
    try {
      return { value: operation.run(view, read.now), error: undefined, failed: false }
    } catch (error) {
      return { value: undefined, error, failed: true }
    }
  })
  return {
    writes: view.writes(),
    settle() {
      for (const [i, answer] of answers.entries()) {
        if (answer.failed) batch[i].reject(answer.error)
        else batch[i].resolve(answer.value)
      }
    },
  }
}
