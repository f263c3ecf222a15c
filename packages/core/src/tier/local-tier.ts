/**
 * Owns localTier: a Store over a shared store that answers most consumes in process, from
 * leases of part of each key's budget, and returns what it did not spend (docs/local-tier.md).
 */
import type { SlotStore } from '../concurrency/slots'
import { ROWS } from '../algorithms/registry'
import { checkStore } from '../limiter/checks'
import { nameStore, storeName } from '../store-call/store-name'
import type { Policy, PolicyOutcome } from '../policy'
import type { Store, StoreBlock, StoreRefund, StoreRequest, StoreResult } from '../store/types'
import { leasedOutcomes, type LeaseEntry } from './lease'
import { LeaseTable } from './lease-table'
import {
  checkLeasePolicy,
  resolveTierOptions,
  type LocalTierOptions,
  type TierSettings,
} from './options'

export type { LocalTierOptions } from './options'

/** A Store that answers from leases; `close()` returns what the leases still hold. */
export interface LocalTier extends Store {
  /** The shared store under the tier. */
  readonly store: Store
  /**
   * Stops the tier: waits for store calls under way, refunds every unspent leased unit, and
   * stops its timer. Later calls go to the shared store as they are. The shared store itself is
   * left open (the tier did not open it).
   */
  close(): Promise<void>
  /** What the tier holds and has done so far, for metrics and tests. */
  stats(): LocalTierStats
}

export interface LocalTierStats {
  /** Leased units not yet spent, over every key. */
  readonly heldUnits: number
  /** Consumes sent to the shared store: leases, and requests passed on as they are. */
  readonly storeConsumes: number
  /** Refunds sent to the shared store: unspent leases, and refunds passed on. */
  readonly storeRefunds: number
  /** Consumes answered from a lease, with no store call. */
  readonly leasedDecisions: number
}

function noop(): void {}

function allAllowed(outcomes: readonly PolicyOutcome[]): boolean {
  for (const outcome of outcomes) if (!outcome.allowed) return false
  return true
}

/**
 * What a lease cannot answer goes to the store as it is: reservations (`maxDelayMs`), which
 * need the store's timing, and the shaping algorithms (the registry's `shapes`), whose every
 * request gets its own delay.
 */
function leasable(request: StoreRequest): boolean {
  if (request.cost < 1 || (request.maxDelayMs ?? 0) > 0) return false
  for (const policy of request.policies) if (ROWS[policy.algorithm].shapes === true) return false
  return true
}

class LocalTierStore implements LocalTier {
  readonly ownClock: boolean | undefined
  /** Concurrency slots are not leased: they are the shared store's own. */
  get slots(): SlotStore | undefined {
    return this.store.slots
  }
  readonly unsupportedAlgorithms: readonly string[] | undefined
  private readonly leases: LeaseTable
  private readonly refunds = new Set<Promise<void>>()
  private readonly sweeper: NodeJS.Timeout
  /** The latest request `now` seen, and when (performance.now()): the sweep's estimate of now. */
  private latestNow = 0
  private latestAt = 0
  private closed = false
  private storeConsumes = 0
  private storeRefunds = 0
  private leasedDecisions = 0

  constructor(
    readonly store: Store,
    private readonly settings: TierSettings,
  ) {
    this.leases = new LeaseTable(settings)
    nameStore(this, `localTier(${storeName(store)})`)
    this.ownClock = store.ownClock
    this.unsupportedAlgorithms = store.unsupportedAlgorithms
    this.sweeper = setInterval(() => this.sweep(), settings.sweepMs)
    this.sweeper.unref()
  }

  checkPolicy(policy: Policy): void {
    checkLeasePolicy(this.settings, policy)
    this.store.checkPolicy?.(policy)
  }

  consume(request: StoreRequest): Promise<StoreResult> {
    this.observe(request.now)
    if (this.closed || !leasable(request)) return this.sharedConsume(request)
    const entry = this.leases.entryFor(request)
    if (request.cost > entry.maxLease) return this.sharedConsume(request)
    return this.take(entry, request)
  }

  peek(request: StoreRequest): Promise<StoreResult> {
    return this.store.peek(request)
  }

  /**
   * A unit spent from the live lease goes back to it; anything else to the store, and so does
   * the refund of a charge the store reported (storeClock: a consume passed on as it was).
   */
  refund(request: StoreRefund): Promise<void> {
    const entry = this.closed || request.storeClock === true ? undefined : this.leases.find(request)
    if (
      entry !== undefined &&
      request.at !== undefined &&
      request.at > entry.takenAt &&
      request.now < entry.expiresAt &&
      entry.held + request.cost <= entry.size
    ) {
      entry.held += request.cost
      return Promise.resolve()
    }
    return this.sharedRefund(request)
  }

  penalize(request: StoreRequest): Promise<void> {
    return this.store.penalize(request)
  }

  /** A blocked key's leases end here (refunded); other processes' end with their lifetime. */
  block(request: StoreBlock): Promise<void> {
    for (const entry of this.leases.ofKey(request.key)) this.endLease(entry, request.now)
    return this.store.block(request)
  }

  /** The store forgets the key: the leases are dropped, nothing to refund into. */
  reset(key: string, policies: readonly Policy[], keys?: readonly string[]): Promise<void> {
    for (const entry of this.leases.ofKey(key)) entry.drop()
    return this.store.reset(key, policies, keys)
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    clearInterval(this.sweeper)
    const now = this.estimatedNow()
    const pending: Promise<void>[] = []
    for (const entry of this.leases) if (entry.pending !== undefined) pending.push(entry.pending)
    await Promise.allSettled(pending)
    for (const entry of this.leases) this.endLease(entry, now)
    this.leases.clear()
    await Promise.allSettled([...this.refunds])
  }

  stats(): LocalTierStats {
    let heldUnits = 0
    for (const entry of this.leases) heldUnits += entry.held
    const { storeConsumes, storeRefunds, leasedDecisions } = this
    return { heldUnits, storeConsumes, storeRefunds, leasedDecisions }
  }

  private sharedConsume(request: StoreRequest): Promise<StoreResult> {
    this.storeConsumes++
    return this.store.consume(request)
  }

  private sharedRefund(request: StoreRefund): Promise<void> {
    this.storeRefunds++
    return this.store.refund(request)
  }

  /** Spends from the lease, or waits for the one being asked, or asks for a new one. */
  private take(entry: LeaseEntry, request: StoreRequest): Promise<StoreResult> {
    if (entry.pending !== undefined) return entry.pending.then(() => this.take(entry, request))
    // A request that waited for a lease while the tier closed: no new lease after close().
    if (this.closed) return this.sharedConsume(request)
    const { cost, now } = request
    if (entry.covers(cost, now)) {
      entry.held -= cost
      this.leasedDecisions++
      return Promise.resolve({ outcomes: leasedOutcomes(entry, request.policies, now) })
    }
    this.endLease(entry, now)
    const attempt = this.lease(entry, request)
    const gate = attempt.then(
      () => {
        entry.pending = undefined
      },
      (error: unknown) => {
        entry.pending = undefined
        throw error
      },
    )
    gate.catch(noop) // waiters see the failure; with none, it is the caller's alone
    entry.pending = gate
    return attempt
  }

  /**
   * One consume of the next lease's size. Refused while the key still has room for this
   * request alone (others hold the rest): the request is asked for as it is, and the next
   * lease starts small again.
   */
  private async lease(entry: LeaseEntry, request: StoreRequest): Promise<StoreResult> {
    const size = Math.max(request.cost, Math.min(entry.nextSize, entry.maxLease))
    const sent = request.now
    if (size > request.cost) {
      const result = await this.sharedConsume({ ...request, cost: size })
      if (allAllowed(result.outcomes)) {
        entry.start(
          size,
          request.cost,
          sent,
          this.estimatedNow(),
          this.ownClock === true,
          result.outcomes,
          result.at,
        )
        return { outcomes: leasedOutcomes(entry, request.policies, sent) }
      }
      entry.nextSize = 1
    }
    const result = await this.sharedConsume(request)
    if (allAllowed(result.outcomes)) {
      const answered = this.estimatedNow()
      entry.start(
        request.cost,
        request.cost,
        sent,
        answered,
        this.ownClock === true,
        result.outcomes,
        result.at,
      )
    } else entry.nextSize = 1
    return result
  }

  /**
   * Ends the entry's lease at `now` and refunds its unspent units as taken when it was: at the
   * store's own time when the store reported it, so they leave exactly what the lease added.
   */
  private endLease(entry: LeaseEntry, now: number): void {
    const at = entry.refundAt
    const storeClock = entry.refundOnStoreClock
    const unspent = entry.end(now)
    if (unspent === 0) return
    const { key, keys, policies } = entry
    const refund = this.sharedRefund(
      storeClock
        ? { key, keys, policies, cost: unspent, now: at, at, storeClock }
        : { key, keys, policies, cost: unspent, now, at },
    )
      // A refund that fails leaves the units charged: fewer admitted, never more.
      .catch(noop)
      .finally(() => this.refunds.delete(refund))
    this.refunds.add(refund)
  }

  private observe(now: number): void {
    if (now >= this.latestNow) {
      this.latestNow = now
      this.latestAt = performance.now()
    }
  }

  /** The requests' clock now, from the latest request's `now` and the time since. */
  private estimatedNow(): number {
    return this.latestNow + Math.floor(performance.now() - this.latestAt)
  }

  /** Refunds the expired leases of keys no request came for. */
  private sweep(): void {
    const now = this.estimatedNow()
    this.leases.sweep(now, (entry) => this.endLease(entry, now))
  }
}

/**
 * Wraps a shared store (RedisStore, MemcachedStore, ...) in a local tier: each process answers
 * most consumes from leases, units of a key's budget taken in one consume, and refunds what it
 * did not spend when a lease ends and on `close()`. Bounds per algorithm: docs/local-tier.md.
 */
export function localTier(store: Store, options?: LocalTierOptions): LocalTier {
  return new LocalTierStore(checkStore(store), resolveTierOptions(options))
}
