/**
 * Owns the queue of operations and which go together: the operations of one event-loop turn go
 * in one batch (up to `batchSize`), at most `concurrency` batches are out at once, and an
 * operation on a row that a batch out holds waits for it, so that operations on one row run in
 * the order they were made and never race each other.
 */
import type { RowView } from './view'

/** One store call as the batches run it: the rows it reads, and its step on them. */
export interface Operation {
  /** Hex keys of the rows it reads or writes. */
  readonly rows: readonly string[]
  /**
   * Its step on the batch's view at the database's `now` (ms). Pure: a batch that lost a
   * compare-and-set runs it again on a fresh view.
   */
  run(view: RowView, databaseNow: number): unknown
  resolve(value: unknown): void
  reject(error: unknown): void
}

export class Pipeline {
  private queue: Operation[] = []
  /** Rows that batches out hold: row -> how many. */
  private readonly held = new Map<string, number>()
  private out = 0
  private scheduled = false

  constructor(
    private readonly runBatch: (batch: Operation[]) => Promise<void>,
    private readonly batchSize: number,
    private readonly concurrency: number,
  ) {}

  submit(operation: Operation): void {
    this.queue.push(operation)
    if (this.scheduled) return
    this.scheduled = true
    // The next turn: every call made in this one joins the batch.
    setImmediate(() => {
      this.scheduled = false
      this.pump()
    })
  }

  private pump(): void {
    while (this.out < this.concurrency && this.queue.length > 0) {
      const batch = this.take()
      if (batch.length === 0) return
      this.send(batch)
    }
  }

  /** The next batch: queued operations in order, skipping those a batch out (or one skipped) holds. */
  private take(): Operation[] {
    const batch: Operation[] = []
    const rest: Operation[] = []
    const waiting = new Set<string>()
    for (const operation of this.queue) {
      const free =
        batch.length < this.batchSize &&
        operation.rows.every((row) => !this.held.has(row) && !waiting.has(row))
      if (free) batch.push(operation)
      else {
        rest.push(operation)
        for (const row of operation.rows) waiting.add(row)
      }
    }
    this.queue = rest
    return batch
  }

  private send(batch: Operation[]): void {
    const rows = new Set<string>()
    for (const operation of batch) for (const row of operation.rows) rows.add(row)
    for (const row of rows) this.held.set(row, (this.held.get(row) ?? 0) + 1)
    this.out++
    const done = (): void => {
      for (const row of rows) {
        const count = (this.held.get(row) as number) - 1
        if (count === 0) this.held.delete(row)
        else this.held.set(row, count)
      }
      this.out--
      this.pump()
    }
    this.runBatch(batch).then(done, (error: unknown) => {
      for (const operation of batch) operation.reject(error)
      done()
    })
  }
}
