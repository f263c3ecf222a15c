/**
 * Owns running one batch atomically: read its rows, run its operations on them (core's
 * transitions, in order), write back every changed row in one compare-and-set statement that
 * writes all of them or none. A batch that lost the race to another writer runs again from a
 * fresh read; after `casAttempts` lost races it runs once more holding its rows' locks.
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
      if (await this.write(this.client.query, pass.writes)) return pass.settle()
    }
    const pass = await this.client.transaction(async (query) => {
      await query(this.sql.ensure, [keys], this.names.ensure)
      const read = parseRead(await query(this.sql.lock, [keys], this.names.lock))
      const locked = apply(batch, read)
      if (!(await this.write(query, locked.writes))) {
        throw withoutStack(() => new StoreError('PostgresStore: rows changed while locked'))
      }
      return locked
    })
    pass.settle()
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
      if (CONFLICTS.has((error as { code?: unknown }).code as string)) return false
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
