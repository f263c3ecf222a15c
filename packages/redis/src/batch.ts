/**
 * Owns batching: the consumes of one event-loop turn that share a per-policy script go to
 * Redis as one call of its batch form, decided one after another in the order made.
 */
import type { StoreRequest, StoreResult } from '@sluice/core'
import type { ReplyShape } from '@sluice/core/web'
import type { ScriptClient } from './client/types'
import { evaluate } from './evaluate'
import { describeValue } from './keys'
import type { LuaScript } from './lua'
import type { LoadedScript, Plan, PolicyScript } from './plan'
import { flatOutcomes, parseOutcomes, severalReplies } from './replies'

/**
 * After this turn's other consumes have queued: setImmediate where it exists (Node, Bun, Deno),
 * else a zero timer (Vercel Edge and workerd have no setImmediate).
 */
const nextTurn: (run: () => void) => void =
  typeof setImmediate === 'function' ? (run) => setImmediate(run) : (run) => setTimeout(run, 0)

/** A consume waiting in the batch of its policy's script (see Batcher.enqueue). */
export interface BatchEntry {
  readonly plan: Plan
  readonly own: PolicyScript
  /** The state key. */
  readonly key: string
  /** The key's block (batches run on standalone Redis only; declared while blocks may exist). */
  readonly block: string | undefined
  /**
   * The packed layout (RedisStoreOptions.packed): the fields of the state and of the block in
   * the hashes `key` and `block`, which a packed batch always declares; for several policies
   * (`states`), the field of each state in its hash, then the block's.
   */
  readonly fields?: readonly string[]
  /**
   * Several policies' consume through the plan's own flat script (lua/flat/several.ts): each
   * policy's state key (packed: the one hash of them all); `key` is unused then.
   */
  readonly states?: readonly string[]
  /**
   * A consume through a generic script (lua/driver.ts): the script and its whole command
   * (sha, key count, KEYS, ARGV), which the batch form runs as one of its decisions. `key` and
   * `block` are unused then.
   */
  readonly call?: { readonly script: LuaScript; readonly args: string[] }
  readonly request: StoreRequest
  /** The sliding-log request id, used when it goes alone. */
  readonly extra: string
  resolve(result: StoreResult): void
  reject(error: unknown): void
}

/** What a batch needs from its store. */
export interface BatchSender {
  readonly client: ScriptClient
  readonly batchSize: number
  readonly serverTime: boolean
  /** `<prefix>:blocks`: whether any key may be blocked (see lua/block.ts). */
  readonly blocks: string
  /** A sliding-log request id for the batch. */
  requestId(plan: Plan): string
  /** Sends one consume alone (a batch of one). */
  runAlone(entry: BatchEntry): Promise<StoreResult>
}

/**
 * ARGV[3] of a flat batch script (lua/flat/flags.ts): 'b' the block keys are declared, 'r' some
 * state key comes more than once, so the script holds repeated keys (HOLD_REPEATED).
 */
function batchFlags(declared: boolean, repeats: boolean): string {
  return (declared ? 'b' : '') + (repeats ? 'r' : '')
}

/** How long to declare block keys after a flag without a TTL (not one the store sets). */
const UNTIMED_BLOCKS_MS = 60_000

/** The consumes waiting for the end of the turn, by script. */
export class Batcher {
  private readonly batches = new Map<PolicyScript, BatchEntry[]>()
  private flushScheduled = false
  /**
   * Until when (performance.now()) `<prefix>:blocks` is known to exist: batches declare their
   * block keys until then (see ANY_BLOCK in lua/flat/frame.ts).
   */
  private blocksUntil = -Infinity

  constructor(private readonly store: BatchSender) {}

  /**
   * Adds a consume to the batch of its script, sent when the event-loop turn ends (one timer
   * for every batch), when it is full, or when a consume at another client-time `now` comes.
   */
  enqueue(entry: BatchEntry): void {
    let batch = this.batches.get(entry.own)
    if (
      batch !== undefined &&
      !this.store.serverTime &&
      batch[0].request.now !== entry.request.now
    ) {
      this.batches.delete(entry.own)
      this.send(batch)
      batch = undefined
    }
    if (batch === undefined) {
      batch = []
      this.batches.set(entry.own, batch)
      if (!this.flushScheduled) {
        this.flushScheduled = true
        nextTurn(this.flush)
      }
    }
    batch.push(entry)
    if (batch.length >= this.store.batchSize) {
      this.batches.delete(entry.own)
      this.send(batch)
    }
  }

  /**
   * Sends the batches held for this turn now: an operation made after consumes in one turn (a
   * peek, refund, penalty, block or reset) goes out after them on the same connection, so Redis
   * runs them in the order they were made, as MemoryStore does.
   */
  sendPending(): void {
    if (this.batches.size > 0) this.flush()
  }

  /** `<prefix>:blocks` exists for at least `ms` more (a block was set, or a batch said so). */
  blocksFor(ms: number): void {
    this.blocksUntil = Math.max(this.blocksUntil, performance.now() + ms)
  }

  /**
   * Sends every batch at the end of the turn, even while an earlier one awaits its reply:
   * holding them back until it came made batches twice as large but cost the server more CPU per
   * request, its event loop idle while it waited (docs/redis.md, "Batches").
   */
  private readonly flush = (): void => {
    this.flushScheduled = false
    // Entry by entry, not clear(): V8's clear() gives the map a new table and leaves the old
    // one pointing to it. The old table sits in the old generation until a major collection, so
    // every young collection took each new table, and the batches in it, for live and promoted
    // them: about 1 MB per scavenge under load, a few percent of the server's CPU in GC.
    for (const [own, batch] of this.batches) {
      this.batches.delete(own)
      this.send(batch)
    }
  }

  /**
   * One EVALSHA of the batch script for every consume of the batch (one alone goes through the
   * plain script): KEYS are their keys in order, then their blocks while any key of the prefix
   * may be blocked (`declare`), then `<prefix>:blocks`; ARGV the batch's sliding-log id, `now`,
   * its flags (batchFlags: blocks declared, a key repeated) and, unless all are 1, the costs.
   * The reply holds each one's reply, in order; or, sent without blocks while some key has one,
   * the blocks flag's PTTL, and nothing was decided: the batch goes again with its blocks.
   */
  private send(batch: readonly BatchEntry[], declare = performance.now() < this.blocksUntil): void {
    try {
      this.sendNow(batch, declare)
    } catch (error) {
      // Nothing may throw out of the flush (a timer callback): each consume fails instead.
      rejectAll(batch, error)
    }
  }

  private sendNow(batch: readonly BatchEntry[], declare: boolean): void {
    const first = batch[0]
    // Several policies go as a batch even alone: their script of one call takes other ARGV.
    if (first.states !== undefined) return this.sendSeveral(batch, declare)
    if (batch.length === 1) {
      this.store.runAlone(first).then(first.resolve, first.reject)
      return
    }
    const { plan, own } = first
    if (first.fields !== undefined) return this.sendPacked(batch)
    if (first.call !== undefined) return this.sendGeneric(batch)
    const args = [own.batch.sha, String((declare ? 2 : 1) * batch.length + 1)]
    let costs = false
    const keys = new Set<string>()
    for (const entry of batch) {
      args.push(entry.key)
      keys.add(entry.key)
      if (entry.request.cost !== 1) costs = true
    }
    if (declare) for (const entry of batch) args.push(entry.block as string)
    args.push(this.store.blocks)
    args.push(plan.hasLog ? this.store.requestId(plan) : '')
    args.push(this.store.serverTime ? '' : String(first.request.now))
    args.push(batchFlags(declare, keys.size < batch.length))
    if (costs) for (const entry of batch) args.push(String(entry.request.cost))
    this.evaluateBatch(batch, own.batch, args, !declare)
  }

  /**
   * Runs a batch script and settles its consumes. `flagged`: the batch went without its block
   * keys, so a reply of the blocks flag's PTTL (an integer) decided nothing, and the batch goes
   * again with them (see ANY_BLOCK in lua/flat/frame.ts).
   */
  private evaluateBatch(
    batch: readonly BatchEntry[],
    script: LoadedScript,
    args: string[],
    flagged: boolean,
  ): void {
    evaluate(this.store.client, script, args, (reply) => {
      if (flagged && typeof reply === 'number') return reply
      if (batch[0].states === undefined) return repliesOf(reply, batch)
      return severalReplies(reply, batch.length, batch[0].plan.policies.length)
    }).then(
      (replies) => {
        if (typeof replies === 'number') {
          // Some key of the prefix is blocked: nothing was decided; again, with the blocks.
          this.blocksFor(replies >= 0 ? replies : UNTIMED_BLOCKS_MS)
          this.send(batch, true)
          return
        }
        settle(batch, replies, this.store.serverTime)
      },
      (error: unknown) => rejectAll(batch, error),
    )
  }

  /**
   * A generic batch (DRIVER_BATCH in lua/driver.ts): KEYS every consume's KEYS in turn; ARGV
   * per consume its key count, its ARGV count and its ARGV.
   */
  private sendGeneric(batch: readonly BatchEntry[]): void {
    const keys: string[] = []
    const argv: string[] = []
    for (const entry of batch) {
      const args = (entry.call as NonNullable<BatchEntry['call']>).args
      const count = Number(args[1])
      for (let i = 2; i < 2 + count; i++) keys.push(args[i])
      argv.push(String(count), String(args.length - 2 - count))
      for (let i = 2 + count; i < args.length; i++) argv.push(args[i])
    }
    const own = batch[0].own.batch
    this.evaluateBatch(batch, own, [own.sha, String(keys.length), ...keys, ...argv], false)
  }

  /**
   * A batch of several policies' consumes (lua/flat/several.ts): keys of their own, KEYS each
   * one's states, then (`declare`) each one's block, then `<prefix>:blocks`; ARGV '', now,
   * its flags (batchFlags), and the costs unless all are 1. Packed: KEYS each one's
   * hash, then each one's block's hash, then `<prefix>:blocks`; ARGV '', now, '', then per
   * consume its fields, its block's field and its cost. As sendNow, a reply of the blocks
   * flag's PTTL decided nothing.
   */
  private sendSeveral(batch: readonly BatchEntry[], declare: boolean): void {
    const first = batch[0]
    const packed = first.fields !== undefined
    const args = [first.own.batch.sha, '']
    const keys = new Set<string>()
    for (const entry of batch) {
      for (const key of entry.states as readonly string[]) {
        args.push(key)
        keys.add(key)
      }
    }
    const repeats = keys.size < args.length - 2
    if (packed || declare) for (const entry of batch) args.push(entry.block as string)
    args.push(this.store.blocks)
    args[1] = String(args.length - 2)
    const now = this.store.serverTime ? '' : String(first.request.now)
    args.push('', now, packed ? '' : batchFlags(declare, repeats))
    if (packed) {
      for (const entry of batch) {
        for (const field of entry.fields as readonly string[]) args.push(field)
        args.push(String(entry.request.cost))
      }
    } else if (batch.some((entry) => entry.request.cost !== 1)) {
      for (const entry of batch) args.push(String(entry.request.cost))
    }
    this.evaluateBatch(batch, first.own.batch, args, !packed && !declare)
  }

  /**
   * A packed batch (lua/flat/frame.ts): KEYS the hashes, then the blocks' hashes, then
   * `<prefix>:blocks` (read before any block field); ARGV `now` and three per consume, its
   * field, its block's field and its cost.
   */
  private sendPacked(batch: readonly BatchEntry[]): void {
    const first = batch[0]
    const args = [first.own.batch.sha, String(2 * batch.length + 1)]
    for (const entry of batch) args.push(entry.key)
    for (const entry of batch) args.push(entry.block as string)
    args.push(this.store.blocks)
    args.push('', this.store.serverTime ? '' : String(first.request.now), '')
    for (const entry of batch) {
      const [state, block] = entry.fields as readonly string[]
      args.push(state, block, String(entry.request.cost))
    }
    this.evaluateBatch(batch, first.own.batch, args, false)
  }
}

function rejectAll(batch: readonly BatchEntry[], error: unknown): void {
  for (const entry of batch) entry.reject(error)
}

/** A batch script's replies, one per consume; throws on a malformed reply. */
function repliesOf(reply: unknown, batch: readonly BatchEntry[]): unknown[] {
  // On Redis's clock a flat batch adds the time it decided at after the replies (frame.ts).
  const timed = Array.isArray(reply) && typeof reply[batch.length] === 'number'
  if (!Array.isArray(reply) || reply.length !== batch.length + (timed ? 1 : 0)) {
    throw new Error(`unexpected reply from the sluice script: ${describeValue(reply)}`)
  }
  return reply as unknown[]
}

/**
 * Resolves each consume of the batch with its reply's outcome, or rejects it; `timed`: Redis
 * decided on its own clock, and the outcomes remember when (replies.ts).
 */
function settle(batch: readonly BatchEntry[], replies: readonly unknown[], timed: boolean): void {
  const decidedAt = replies.length > batch.length ? (replies[batch.length] as number) : undefined
  for (let i = 0; i < batch.length; i++) {
    const { plan, request, resolve, reject, call, states } = batch[i]
    // A decision that failed in the script (see tail in lua/flat/frame.ts) fails alone.
    if (replies[i] instanceof Error) {
      reject(replies[i])
      continue
    }
    try {
      if (call !== undefined || states !== undefined) {
        resolve(parseOutcomes(replies[i], plan, request, timed))
      } else {
        const kind = plan.flat as ReplyShape
        resolve(flatOutcomes(kind, replies[i], plan.policies[0], request, timed, decidedAt))
      }
    } catch (error) {
      reject(error)
    }
  }
}
