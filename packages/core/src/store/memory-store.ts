/**
 * Owns MemoryStore: the embedded store, state in flat arrays, bounded by keys and bytes, deciding
 * synchronously.
 */
import { algorithms, decideThenApply, newOutcome, type Algorithm } from '../algorithms'
import { Verdict } from '../decision'
import { checkPositiveInteger } from '../options'
import type { Policy, PolicyOutcome } from '../policy'
import { ABSENT, KeyIndex } from './key-index'
import type { Store, StoreBlock, StoreRefund, StoreRequest, StoreResult } from './types'

export interface MemoryStoreOptions {
  /**
   * Most keys kept per limit; past it the least recently used key is forgotten.
   * @default 1_000_000
   */
  maxKeys?: number
  /**
   * How often expired keys are reclaimed from the cold end, in ms (the timer is `unref`ed and
   * never keeps the process alive). Expired state is also ignored lazily on every read.
   * @default 60_000
   */
  sweepIntervalMs?: number
  /**
   * Most bytes of state the store allocates, over all its limits: each key's row of 8-byte
   * numbers (a sliding-log row holds one per admitted request of the window). Past it, a limit
   * that needs room forgets its least recently used key instead of growing. Key strings and
   * the key index come on top (bench:core measures ~81 B of heap per fixed-window key such as
   * `user:123456`, of which its row is 24 B).
   * @default 1 GiB (2^30)
   */
  maxBytes?: number
}

/** The state bytes the tables of one store may allocate together (`maxBytes`). */
class ByteBudget {
  allocated = 0
  constructor(readonly max: number) {}

  /** Whether `bytes` more still fit. */
  fits(bytes: number): boolean {
    return this.allocated + bytes <= this.max
  }
}

const NONE = ABSENT
/** Bytes a policy's table allocates before it holds its first keys. */
const FIRST_ALLOCATION = 256 * 1024

/**
 * The keys of one policy in one buffer, no object per key: row `r` holds the state's slots as
 * doubles, then its LRU links as two int32 (the next newer and the next older row, NONE at the
 * ends) in the last double's place. A key's state and links share a cache line or two, so a
 * decision on a cold key waits for memory once there rather than once per array.
 */
class PolicyTable {
  private readonly index: KeyIndex
  private state!: Float64Array
  private links!: Int32Array
  private freeRows: number[] = []
  private capacity: number
  /** The most recently used row (NONE when empty); a hot key's row is usually this one. */
  private newest = NONE
  private oldest = NONE
  /** State slots per row. */
  slots: number
  /** Doubles per row: the slots, then the links. */
  stride: number

  constructor(
    readonly algorithm: Algorithm,
    slots: number,
    private readonly maxKeys: number,
    private readonly budget: ByteBudget,
  ) {
    this.slots = slots
    this.stride = slots + 1
    // The first allocation holds up to 1024 rows but never more than FIRST_ALLOCATION bytes:
    // a sliding-log row holds `limit` timestamps, and a large limit must not reserve
    // gigabytes before the second key arrives (the table doubles as keys come).
    const rowBytes = this.stride * 8
    const room = Math.floor((budget.max - budget.allocated) / rowBytes)
    this.capacity = Math.max(
      1,
      Math.min(maxKeys, 1024, Math.floor(FIRST_ALLOCATION / rowBytes), room),
    )
    budget.allocated += this.capacity * rowBytes
    this.allocate(new ArrayBuffer(this.capacity * this.stride * 8))
    this.index = new KeyIndex(this.capacity)
  }

  /** Keys held. */
  get size(): number {
    return this.index.size
  }

  get vector(): Float64Array {
    return this.state
  }

  private allocate(buffer: ArrayBuffer): void {
    this.state = new Float64Array(buffer)
    this.links = new Int32Array(buffer)
  }

  /** Where row's newer link is (its older one follows), in int32 units. */
  private link(row: number): number {
    return (row * this.stride + this.slots) * 2
  }

  /** Sliding-log state grows with the limit; a soft or elastic allowance may need wider rows. */
  widen(slots: number): void {
    const stride = slots + 1
    // Wider rows are needed to decide at all: they are allocated even past maxBytes.
    this.budget.allocated += this.capacity * (stride - this.stride) * 8
    const buffer = new ArrayBuffer(this.capacity * stride * 8)
    const bytes = new Uint8Array(buffer)
    const old = new Uint8Array(this.state.buffer)
    for (let row = 0; row < this.capacity; row++) {
      const from = row * this.stride * 8
      const to = row * stride * 8
      bytes.set(old.subarray(from, from + this.slots * 8), to) // the state; new slots stay 0
      bytes.set(old.subarray(from + this.slots * 8, from + this.stride * 8), to + slots * 8) // links
    }
    this.allocate(buffer)
    this.slots = slots
    this.stride = stride
  }

  /** The key's row, touched as most recently used; NONE when absent. */
  find(key: string): number {
    // A hot key is usually the newest row: one string comparison instead of a hash.
    if (this.newest !== NONE && this.index.keyAt(this.newest) === key) return this.newest
    const row = this.index.find(key)
    if (row !== NONE) this.touch(row)
    return row
  }

  /** The key's row without touching it; NONE when absent. */
  rowOf(key: string): number {
    return this.index.find(key)
  }

  /** A new zeroed row for the key, evicting the least recently used key when full. */
  insert(key: string): number {
    let row: number
    if (this.freeRows.length > 0) {
      row = this.freeRows.pop() as number
    } else if (this.index.size < this.capacity) {
      row = this.index.size
    } else if (this.capacity < this.maxKeys && this.budget.fits(this.growthBytes())) {
      this.grow()
      row = this.index.size
    } else {
      row = this.oldest
      this.unlink(row)
      this.index.remove(row)
    }
    this.state.fill(0, row * this.stride, row * this.stride + this.slots)
    this.index.add(key, row)
    this.linkNewest(row)
    return row
  }

  delete(key: string): void {
    const row = this.index.find(key)
    if (row !== NONE) this.deleteRow(row)
  }

  private deleteRow(row: number): void {
    this.index.remove(row)
    this.unlink(row)
    this.freeRows.push(row)
  }

  /** Forgets keys whose state is empty again, from the least recently used end. */
  sweep(now: number, budget: number): void {
    while (budget-- > 0 && this.oldest !== NONE) {
      const row = this.oldest
      if (this.algorithm.expiresAt(this.state, row * this.stride, this.policyForSweep) > now) return
      this.deleteRow(row)
    }
  }

  /** The policy last used with this table (its expiry depends on the window, not on scaling). */
  policyForSweep!: Policy

  /** The capacity a growth would reach: double, within maxKeys and the store's byte budget. */
  private grownCapacity(): number {
    const rowBytes = this.stride * 8
    const room = Math.floor((this.budget.max - this.budget.allocated) / rowBytes)
    return Math.min(this.maxKeys, this.capacity * 2, this.capacity + room)
  }

  /** Bytes a growth adds (0 when there is no room for even one more row). */
  private growthBytes(): number {
    const extra = this.grownCapacity() - this.capacity
    return extra > 0 ? extra * this.stride * 8 : Infinity
  }

  private grow(): void {
    const capacity = this.grownCapacity()
    this.budget.allocated += (capacity - this.capacity) * this.stride * 8
    const buffer = new ArrayBuffer(capacity * this.stride * 8)
    // Bytes, not doubles: the links' bit patterns must come through unchanged.
    new Uint8Array(buffer).set(new Uint8Array(this.state.buffer))
    this.index.reserveRows(capacity)
    this.allocate(buffer)
    this.capacity = capacity
  }

  /** Makes a row other than the newest the newest. */
  private touch(row: number): void {
    this.unlink(row)
    this.linkNewest(row)
  }

  private linkNewest(row: number): void {
    const links = this.links
    const at = this.link(row)
    links[at] = NONE
    links[at + 1] = this.newest
    if (this.newest !== NONE) links[this.link(this.newest)] = row
    this.newest = row
    if (this.oldest === NONE) this.oldest = row
  }

  private unlink(row: number): void {
    const links = this.links
    const at = this.link(row)
    const newer = links[at]
    const older = links[at + 1]
    if (newer !== NONE) links[this.link(newer) + 1] = older
    else this.newest = older
    if (older !== NONE) links[this.link(older)] = newer
    else this.oldest = newer
  }
}

/** The state identity of policy i: the key itself, or the key and `keys[i]` (rules). */
function stateKey(key: string, keys: readonly string[] | undefined, i: number): string {
  return keys === undefined ? key : `${key}\u0000${keys[i]}`
}

/**
 * The embedded store: in-process, bounded (`maxKeys` per limit, least recently used first
 * out), O(1) per decision, compact (one Float64Array row per key, no object per key).
 * Every call is atomic because it runs to completion on the event loop.
 */
export class MemoryStore implements Store {
  /** In-process: the limiter arms no timeout around its calls. */
  readonly local = true
  private readonly tables = new Map<string, PolicyTable>()
  private readonly maxKeys: number
  private readonly budget: ByteBudget
  private readonly sweeper: NodeJS.Timeout
  private latestNow = 0
  private lastPolicy: Policy | undefined
  private lastTable: PolicyTable | undefined
  /** State of a key the store has never seen: all zeros, as wide as the widest row. */
  private empty = new Float64Array(64)
  /** Blocked keys: key -> until (ms). Kept apart from the counters; expired entries go lazily. */
  private readonly blocks = new Map<string, number>()
  /** What consumeNow returns for one policy, refilled on every call. */
  private readonly single = new Array<PolicyOutcome>(1)

  constructor(options: MemoryStoreOptions = {}) {
    this.maxKeys = checkPositiveInteger(options.maxKeys ?? 1_000_000, 'maxKeys')
    this.budget = new ByteBudget(checkPositiveInteger(options.maxBytes ?? 2 ** 30, 'maxBytes'))
    const interval = checkPositiveInteger(options.sweepIntervalMs ?? 60_000, 'sweepIntervalMs')
    this.sweeper = setInterval(() => this.sweep(), interval)
    this.sweeper.unref()
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
      table.algorithm.apply(table.vector, row * table.stride, now, policy, cost)
    }
    return outcomes
  }

  /**
   * consumeNow for one policy without rule keys, and without a request object or an array:
   * the limiter's hot path. Internal: not part of the Store contract. Kept small (a blocked or
   * new key goes elsewhere) so that V8 inlines it, and what it calls, into the limiter.
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
    const row = table.find(key)
    if (row === NONE) return this.consumeNewKey(table, key, policy, cost, now, maxDelayMs, out)
    const algorithm = table.algorithm
    const base = row * table.stride
    const vector = table.vector
    if (algorithm.consume !== undefined) {
      algorithm.consume(vector, base, now, policy, cost, out, maxDelayMs)
    } else {
      decideThenApply(algorithm, vector, base, now, policy, cost, out, maxDelayMs)
    }
    return out
  }

  /** consumeOneNow for a key the table does not hold: decided from the empty state, stored if admitted. */
  private consumeNewKey(
    table: PolicyTable,
    key: string,
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
    const row = table.insert(key)
    algorithm.apply(table.vector, row * table.stride, now, policy, cost)
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
        table.algorithm.refund(table.vector, row * table.stride, now, policy, cost, at)
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
      table.algorithm.penalize(table.vector, row * table.stride, now, policy, cost)
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
    clearInterval(this.sweeper)
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
        const base = row * table.stride
        table.algorithm.decide(table.vector, base, now, policy, cost, out, maxDelayMs)
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
    const algorithm = algorithms[policy.algorithm]
    if (table === undefined) {
      table = new PolicyTable(algorithm, algorithm.slots(policy), this.maxKeys, this.budget)
      this.tables.set(policy.id, table)
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
