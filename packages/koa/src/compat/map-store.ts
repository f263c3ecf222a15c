/**
 * Owns MapStore: a Sluice Store whose state lives in a Map the application owns (koa-ratelimit's
 * `db: new Map()`), so `db.clear()` or `db.delete(key)` forgets clients as it did with the peer.
 * It runs core's transitions (algorithmOf), as MemoryStore does; no algorithm is written here.
 */
import type {
  Policy,
  PolicyOutcome,
  Store,
  StoreBlock,
  StoreRefund,
  StoreRequest,
  StoreResult,
} from '@sluice/core'
import { algorithmOf } from '@sluice/core/adapter'

/** What one client key holds in the Map: a state row per policy, and its block. */
export interface MapEntry {
  /** Per (rule key,) policy id: the algorithm's state vector. */
  readonly rows: Map<string, Float64Array>
  /** ms; 0 when the key is not blocked. */
  blockedUntil: number
  /** ms: when every row written so far is empty again (the sweep drops the entry then). */
  expiresAt: number
}

/** Oldest entries looked at per call: more than the one a call can add, so a backlog shrinks. */
const SWEEP_PER_CALL = 4

function outcome(allowed: boolean): PolicyOutcome {
  return { allowed, remaining: 0, resetMs: 0, retryAfterMs: 0, delayMs: 0 }
}

/** The state identity of policy i within a key: its id, with the rule's state key if any. */
function rowId(policy: Policy, keys: readonly string[] | undefined, i: number): string {
  return keys === undefined ? policy.id : `${keys[i]}\u0000${policy.id}`
}

/**
 * A Store on a Map the caller owns: one entry per client key, named `<prefix>:<key>`. Expired
 * state is dropped when its key is next read, and each consume sweeps the oldest entries (the Map
 * keeps insertion order, which is window order here): an entry whose window ended is gone
 * within a few calls, so the Map holds about the clients of the last window. koa-ratelimit's
 * Map keeps every client ever seen; this one does not (docs/migration.md).
 */
export class MapStore implements Store {
  /** In-process: the limiter arms no timeout around its calls. */
  readonly local = true

  constructor(
    private readonly map: Map<string, unknown>,
    private readonly prefix: string,
  ) {}

  consume(request: StoreRequest): Promise<StoreResult> {
    return Promise.resolve({ outcomes: this.consumeNow(request) })
  }

  /** Checks every policy, then takes `cost` from each when all admit (all-or-nothing). */
  consumeNow({ key, keys, policies, cost, now, maxDelayMs }: StoreRequest): PolicyOutcome[] {
    // Refused requests sweep too: a flood of them still clears what has expired.
    this.sweep(now)
    const entry = this.entryOf(key, policies, keys, now)
    if (entry !== undefined && entry.blockedUntil > now) return this.blocked(entry, policies, now)
    const outcomes = this.decideAll(entry, policies, keys, cost, now, maxDelayMs)
    if (cost === 0 || outcomes.some((o) => !o.allowed)) return outcomes
    const target = entry ?? this.create(key)
    policies.forEach((policy, i) => {
      const row = this.rowOf(target, policy, keys, i)
      algorithmOf(policy).apply(row, 0, now, policy, cost)
      target.expiresAt = Math.max(target.expiresAt, algorithmOf(policy).expiresAt(row, 0, policy))
    })
    return outcomes
  }

  /**
   * Drops up to SWEEP_PER_CALL of the oldest entries whose state has expired, stopping at the
   * first live one. Values the application put in the Map (not this store's) are passed over.
   */
  private sweep(now: number): void {
    let looked = 0
    for (const [name, value] of this.map) {
      if (looked++ === SWEEP_PER_CALL) return
      const entry = value as Partial<MapEntry> | undefined
      if (!name.startsWith(this.prefix) || !(entry?.rows instanceof Map)) continue
      if ((entry.expiresAt ?? Infinity) > now || (entry.blockedUntil ?? 0) > now) return
      this.map.delete(name)
    }
  }

  peek({ key, keys, policies, cost, now, maxDelayMs }: StoreRequest): Promise<StoreResult> {
    const entry = this.entryOf(key, policies, keys, now)
    if (entry !== undefined && entry.blockedUntil > now) {
      return Promise.resolve({ outcomes: this.blocked(entry, policies, now) })
    }
    return Promise.resolve({
      outcomes: this.decideAll(entry, policies, keys, cost, now, maxDelayMs),
    })
  }

  refund({ key, keys, policies, cost, now, at }: StoreRefund): Promise<void> {
    const entry = this.entryOf(key, policies, keys, now)
    policies.forEach((policy, i) => {
      const row = entry?.rows.get(rowId(policy, keys, i))
      if (row !== undefined) algorithmOf(policy).refund(row, 0, now, policy, cost, at)
    })
    return Promise.resolve()
  }

  penalize({ key, keys, policies, cost, now }: StoreRequest): Promise<void> {
    const entry = this.entryOf(key, policies, keys, now) ?? this.create(key)
    policies.forEach((policy, i) => {
      const row = this.rowOf(entry, policy, keys, i)
      algorithmOf(policy).penalize(row, 0, now, policy, cost)
      entry.expiresAt = Math.max(entry.expiresAt, algorithmOf(policy).expiresAt(row, 0, policy))
    })
    return Promise.resolve()
  }

  block({ key, until, now }: StoreBlock): Promise<void> {
    const entry = this.map.get(this.nameOf(key)) as MapEntry | undefined
    if (until > now) (entry ?? this.create(key)).blockedUntil = until
    else if (entry !== undefined) entry.blockedUntil = 0
    return Promise.resolve()
  }

  reset(key: string, policies: readonly Policy[], keys?: readonly string[]): Promise<void> {
    const entry = this.map.get(this.nameOf(key)) as MapEntry | undefined
    if (entry === undefined) return Promise.resolve()
    policies.forEach((policy, i) => entry.rows.delete(rowId(policy, keys, i)))
    entry.blockedUntil = 0
    if (entry.rows.size === 0) this.map.delete(this.nameOf(key))
    return Promise.resolve()
  }

  private nameOf(key: string): string {
    return `${this.prefix}:${key}`
  }

  private create(key: string): MapEntry {
    const entry: MapEntry = { rows: new Map(), blockedUntil: 0, expiresAt: 0 }
    this.map.set(this.nameOf(key), entry)
    return entry
  }

  /**
   * The key's entry with the rows of these policies that have expired dropped; undefined (and
   * the Map entry deleted) when nothing of it is left. A value the store did not write (the
   * application put something else under the name) counts as no state and is replaced.
   */
  private entryOf(
    key: string,
    policies: readonly Policy[],
    keys: readonly string[] | undefined,
    now: number,
  ): MapEntry | undefined {
    const name = this.nameOf(key)
    const entry = this.map.get(name) as MapEntry | undefined
    if (entry === undefined) return undefined
    if (!(entry.rows instanceof Map)) {
      this.map.delete(name)
      return undefined
    }
    policies.forEach((policy, i) => {
      const id = rowId(policy, keys, i)
      const row = entry.rows.get(id)
      if (row !== undefined && algorithmOf(policy).expiresAt(row, 0, policy) <= now) {
        entry.rows.delete(id)
      }
    })
    if (entry.rows.size > 0 || entry.blockedUntil > now) return entry
    this.map.delete(name)
    return undefined
  }

  /** The row of policy i, created empty (all zeros) when the key has none yet. */
  private rowOf(
    entry: MapEntry,
    policy: Policy,
    keys: readonly string[] | undefined,
    i: number,
  ): Float64Array {
    const id = rowId(policy, keys, i)
    let row = entry.rows.get(id)
    if (row === undefined) {
      row = new Float64Array(algorithmOf(policy).slots(policy))
      entry.rows.set(id, row)
    }
    return row
  }

  private decideAll(
    entry: MapEntry | undefined,
    policies: readonly Policy[],
    keys: readonly string[] | undefined,
    cost: number,
    now: number,
    maxDelayMs: number | undefined,
  ): PolicyOutcome[] {
    return policies.map((policy, i) => {
      const algorithm = algorithmOf(policy)
      const row =
        entry?.rows.get(rowId(policy, keys, i)) ?? new Float64Array(algorithm.slots(policy))
      const out = outcome(false)
      algorithm.decide(row, 0, now, policy, cost, out, maxDelayMs)
      return out
    })
  }

  /** What every policy answers while the key is blocked: refused until the block ends. */
  private blocked(entry: MapEntry, policies: readonly Policy[], now: number): PolicyOutcome[] {
    const wait = entry.blockedUntil - now
    return policies.map(() => ({ ...outcome(false), resetMs: wait, retryAfterMs: wait }))
  }
}
