/**
 * Owns MemoryStore: the embedded store, state in flat arrays, bounded by keys and bytes, deciding
 * synchronously.
 */
import { MemorySlots } from '../concurrency/slots'
import { algorithmOf, decideThenApply } from '../algorithms'
import { newOutcome, Verdict } from '../decision'
import { invalidOption } from '../errors'
import { declareOptions } from '../declared-options'
import { checkPositiveInteger } from '../option-checks'
import type { Policy, PolicyOutcome } from '../policy'
import { ByteBudget, NONE, PolicyTable } from './policy-table'
import { escapeKeyPart, joinKeyParts } from './key-parts'
import type { Store, StoreBlock, StoreRefund, StoreRequest, StoreResult } from './types'
import { unrefTimer } from '../timers'
import { nameStore } from '../store-call/store-name'

export interface MemoryStoreOptions {
  /**
   * Most keys kept per limit; past it the least recently used key is forgotten.
   * @default 1_000_000
   */
  maxKeys?: number
  /**
   * How often expired keys are reclaimed from the cold end, in ms (the timer is `unref`ed and
   * never keeps the process alive), at most 2^31 - 1 (Node's longest timer). Expired state is
   * also ignored lazily on every read.
   * @default 60_000
   */
  sweepIntervalMs?: number
  /**
   * Most bytes of state the store allocates, over all its limits: each key's row of 8-byte
   * numbers (a sliding-log row holds one per admitted request of the window) with its LRU links
   * and the key itself (up to 15 characters below U+0100; a longer key is kept as a string
   * beside the rows, on top). Past it, a limit that needs room forgets its least recently used
   * key instead of growing. The key index comes on top (bench:core measures ~49 B of heap per
   * fixed-window key such as `user:123456`, of which its row is 40 B). Rows are added in
   * segments of at most 256 kB and never copied, so the bound holds at every moment, while the
   * store grows too.
   * @default 1 GiB (2^30)
   */
  maxBytes?: number
}

/** MemoryStore's options, declared once; null takes the default, as `value ?? default` did. */
/** The longest delay `setInterval` keeps: Node runs a longer one every 1 ms instead. */
const MAX_TIMER_MS = 2 ** 31 - 1

function checkTimerMs(value: unknown, option: string): number {
  const ms = checkPositiveInteger(value, option, `a whole number of ms from 1 to ${MAX_TIMER_MS}`)
  if (ms > MAX_TIMER_MS)
    invalidOption(option, value, `a whole number of ms from 1 to ${MAX_TIMER_MS}`)
  return ms
}

export const MEMORY_STORE_OPTIONS = declareOptions<MemoryStoreOptions>('MemoryStore', {
  maxKeys: {
    doc: 'keys kept per limit; the least recently used go first',
    default: 1_000_000,
    check: checkPositiveInteger,
    orNull: true,
  },
  sweepIntervalMs: {
    doc: 'how often expired state is swept (ms)',
    default: 60_000,
    check: checkTimerMs,
    orNull: true,
  },
  maxBytes: {
    doc: "most bytes the store's state may take",
    default: 2 ** 30,
    check: checkPositiveInteger,
    orNull: true,
  },
})

/**
 * The state identity of policy i: the key, or the key and `keys[i]` (rules) joined, so that no
 * key names another key's rule state, whatever either holds (key-parts.ts).
 */
function stateKey(key: string, keys: readonly string[] | undefined, i: number): string {
  return keys === undefined ? escapeKeyPart(key) : joinKeyParts(key, keys[i])
}

/**
 * The embedded store: in-process, bounded (`maxKeys` per limit, least recently used first
 * out), O(1) per decision, compact (one row per key in a typed array, key included: no
 * object and no string per key).
 * Every call is atomic because it runs to completion on the event loop.
 */
export class MemoryStore implements Store {
  /** In-process: the limiter arms no timeout around its calls. */
  readonly local = true
  /** Slots of `concurrency` limits, in this process. */
  readonly slots = new MemorySlots()
  private readonly tables = new Map<string, PolicyTable>()
  private readonly maxKeys: number
  private readonly budget: ByteBudget
  private readonly sweepIntervalMs: number
  /**
   * Started with the first table, not at construction: Cloudflare Workers refuse timers (and
   * random values, which the key index draws) in global scope, where apps create limiters.
   * `null` once closed.
   */
  private sweeper: ReturnType<typeof setInterval> | undefined | null
  private latestNow = 0
  private lastPolicy: Policy | undefined
  private lastTable: PolicyTable | undefined
  /** State of a key the store has never seen: all zeros, as wide as the widest row. */
  private empty = new Float64Array(64)
  /** Blocked keys: key -> until (ms). Kept apart from the counters; expired entries go lazily. */
  private readonly blocks = new Map<string, number>()
  /** The last key idOf escaped, and its identity. */
  private lastKey = ''
  private lastId = ''
  /** What consumeNow returns for one policy, refilled on every call. */
  private readonly single = new Array<PolicyOutcome>(1)

  constructor(options: MemoryStoreOptions = {}) {
    if (typeof options !== 'object' || options === null) {
      invalidOption('options', options, 'an object of MemoryStore options')
    }
    // Each declared with a default: set whenever the options resolve.
    const settings = MEMORY_STORE_OPTIONS.resolve(options) as Required<MemoryStoreOptions>
    this.maxKeys = settings.maxKeys
    this.budget = new ByteBudget(settings.maxBytes)
    this.sweepIntervalMs = settings.sweepIntervalMs
  }

  consume(request: StoreRequest): Promise<StoreResult> {
    return Promise.resolve({ outcomes: this.consumeNow(request).slice() })
  }

  /**
   * The synchronous core of `consume`, for callers that can use the answer at once. The array
   * of a single-policy call is reused by the next call (one allocation less per decision).
   */
  consumeNow({ key, policies, cost, now, keys, maxDelayMs }: StoreRequest): PolicyOutcome[] {
    if (policies.length === 1 && keys === undefined) {
      this.single[0] = this.consumeOneNow(key, policies[0], cost, now, maxDelayMs ?? 0)
      return this.single
    }
    if (now > this.latestNow) this.latestNow = now
    if (this.blocks.size > 0 && this.isBlocked(key, now)) return this.blocked(key, policies, now)
    const outcomes = this.decideAll(key, keys, policies, cost, now, maxDelayMs)
    if (cost === 0) return outcomes
    for (let i = 0; i < outcomes.length; i++) if (!outcomes[i].allowed) return outcomes
    for (let i = 0; i < policies.length; i++) {
      const policy = policies[i]
      const table = this.table(policy)
      const id = stateKey(key, keys, i)
      let row = table.rowOf(id)
      if (row === NONE) row = table.insert(id)
      table.algorithm.apply(table.vectorOf(row), table.baseOf(row), now, policy, cost)
    }
    return outcomes
  }

  /**
   * consumeNow for one policy without rule keys, and without a request object or an array:
   * the limiter's hot path (Store.consumeOneNow). Kept small (a blocked or new key goes
   * elsewhere) so that V8 inlines it, and what it calls, into the limiter.
   */
  consumeOneNow(
    key: string,
    policy: Policy,
    cost: number,
    now: number,
    maxDelayMs: number,
  ): Verdict {
    if (now > this.latestNow) this.latestNow = now
    if (this.blocks.size > 0 && this.isBlocked(key, now)) return this.blockedOne(key, policy, now)
    const table = policy === this.lastPolicy ? (this.lastTable as PolicyTable) : this.table(policy)
    const out = new Verdict(policy, now)
    const id = this.idOf(key)
    const row = table.find(id)
    if (row === NONE) return this.consumeNewKey(table, id, policy, cost, now, maxDelayMs, out)
    const algorithm = table.algorithm
    const base = table.baseOf(row)
    const vector = table.vectorOf(row)
    if (algorithm.consume !== undefined) {
      algorithm.consume(vector, base, now, policy, cost, out, maxDelayMs)
    } else {
      decideThenApply(algorithm, vector, base, now, policy, cost, out, maxDelayMs)
    }
    return out
  }

  /**
   * The state identity of a key decided alone (stateKey without rule keys), remembered for the
   * last key: a hot key repeats, and escaping scans the key (a call out of the compiled code).
   */
  private idOf(key: string): string {
    if (key !== this.lastKey) {
      this.lastKey = key
      this.lastId = escapeKeyPart(key)
    }
    return this.lastId
  }

  /** consumeOneNow for a key the table does not hold: decided from the empty state, stored if admitted. */
  private consumeNewKey(
    table: PolicyTable,
    id: string,
    policy: Policy,
    cost: number,
    now: number,
    maxDelayMs: number,
    out: Verdict,
  ): Verdict {
    const algorithm = table.algorithm
    if (this.empty.length < table.slots) this.empty = new Float64Array(table.slots)
    algorithm.decide(this.empty, 0, now, policy, cost, out, maxDelayMs)
    if (!out.allowed || cost === 0) return out
    const row = table.insert(id)
    algorithm.apply(table.vectorOf(row), table.baseOf(row), now, policy, cost)
    return out
  }

  peek({ key, keys, policies, cost, now, maxDelayMs }: StoreRequest): Promise<StoreResult> {
    if (this.blocks.size > 0 && this.isBlocked(key, now)) {
      return Promise.resolve({ outcomes: this.blocked(key, policies, now) })
    }
    return Promise.resolve({
      outcomes: this.decideAll(key, keys, policies, cost, now, maxDelayMs),
    })
  }

  /** Gives back `cost`; without `at` (a reward) from the newest usage. */
  refund({ key, keys, policies, cost, now, at }: StoreRefund): Promise<void> {
    for (let i = 0; i < policies.length; i++) {
      const policy = policies[i]
      const table = this.table(policy)
      const row = table.find(stateKey(key, keys, i))
      if (row !== NONE)
        table.algorithm.refund(table.vectorOf(row), table.baseOf(row), now, policy, cost, at)
    }
    return Promise.resolve()
  }

  /** Adds `cost` to every policy whatever the limit, never beyond full. */
  penalize({ key, keys, policies, cost, now }: StoreRequest): Promise<void> {
    if (now > this.latestNow) this.latestNow = now
    for (let i = 0; i < policies.length; i++) {
      const policy = policies[i]
      const table = this.table(policy)
      const id = stateKey(key, keys, i)
      let row = table.find(id)
      if (row === NONE) row = table.insert(id)
      table.algorithm.penalize(table.vectorOf(row), table.baseOf(row), now, policy, cost)
    }
    return Promise.resolve()
  }

  /** Refuses the key until `until`; a later block replaces an earlier one, `until <= now` lifts it. */
  block({ key, until, now }: StoreBlock): Promise<void> {
    if (until > now) this.blocks.set(key, until)
    else this.blocks.delete(key)
    return Promise.resolve()
  }

  reset(key: string, policies: readonly Policy[], keys?: readonly string[]): Promise<void> {
    for (let i = 0; i < policies.length; i++) this.table(policies[i]).delete(stateKey(key, keys, i))
    this.blocks.delete(key)
    return Promise.resolve()
  }

  /** Keys held for one policy id (for tests and metrics). */
  size(policyId?: string): number {
    if (policyId !== undefined) return this.tables.get(policyId)?.size ?? 0
    let total = 0
    for (const table of this.tables.values()) total += table.size
    return total
  }

  /** Bytes of state allocated over all limits: what `maxBytes` bounds (for tests and metrics). */
  stateBytes(): number {
    return this.budget.allocated
  }

  close(): Promise<void> {
    if (this.sweeper) clearInterval(this.sweeper)
    this.sweeper = null
    return Promise.resolve()
  }

  private decideAll(
    key: string,
    keys: readonly string[] | undefined,
    policies: readonly Policy[],
    cost: number,
    now: number,
    maxDelayMs: number | undefined,
  ): PolicyOutcome[] {
    const outcomes: PolicyOutcome[] = new Array(policies.length)
    for (let i = 0; i < policies.length; i++) {
      const policy = policies[i]
      const table = this.table(policy)
      // Every request counts as a use, rejected ones too: a key kept busy must not be evicted
      // (and so forgiven) by other keys' churn.
      const row = table.find(stateKey(key, keys, i))
      const out = newOutcome(policy)
      if (row === NONE) {
        if (this.empty.length < table.slots) this.empty = new Float64Array(table.slots)
        table.algorithm.decide(this.empty, 0, now, policy, cost, out, maxDelayMs)
      } else {
        const vector = table.vectorOf(row)
        table.algorithm.decide(vector, table.baseOf(row), now, policy, cost, out, maxDelayMs)
      }
      outcomes[i] = out
    }
    return outcomes
  }

  /** Whether a block holds the key at `now`; an expired one is dropped. */
  private isBlocked(key: string, now: number): boolean {
    const until = this.blocks.get(key)
    if (until === undefined) return false
    if (until > now) return true
    this.blocks.delete(key)
    return false
  }

  /** What every policy answers while the key is blocked. */
  private blocked(key: string, policies: readonly Policy[], now: number): Verdict[] {
    return policies.map((policy) => this.blockedOne(key, policy, now))
  }

  /** What one policy answers while the key is blocked: refused until the block ends. */
  private blockedOne(key: string, policy: Policy, now: number): Verdict {
    const wait = (this.blocks.get(key) as number) - now
    const out = new Verdict(policy, now)
    out.resetMs = wait
    out.retryAfterMs = wait
    return out
  }

  private table(policy: Policy): PolicyTable {
    // Most calls repeat the previous policy: skip the Map lookup and the width check then.
    if (policy === this.lastPolicy) return this.lastTable as PolicyTable
    let table = this.tables.get(policy.id)
    const algorithm = algorithmOf(policy)
    if (table === undefined) {
      table = new PolicyTable(algorithm, algorithm.slots(policy), this.maxKeys, this.budget)
      this.tables.set(policy.id, table)
      if (this.sweeper === undefined) {
        this.sweeper = setInterval(() => this.sweep(), this.sweepIntervalMs)
        unrefTimer(this.sweeper)
      }
    } else if (table.slots < algorithm.slots(policy)) {
      table.widen(algorithm.slots(policy))
    }
    table.policyForSweep = policy
    this.lastPolicy = policy
    this.lastTable = table
    return table
  }

  private sweep(): void {
    for (const table of this.tables.values()) table.sweep(this.latestNow, 10_000)
    if (this.blocks.size > 0) {
      for (const [key, until] of this.blocks) if (until <= this.latestNow) this.blocks.delete(key)
    }
  }
}

nameStore(MemoryStore, 'MemoryStore')
