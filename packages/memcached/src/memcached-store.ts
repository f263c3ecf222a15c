/**
 * Owns MemcachedStore: the Store contract over memcached: counters by increment (counters.ts)
 * and meters by compare-and-swap (meters.ts), decided by core's transitions on the state read
 * (state.ts). Options: options.ts.
 */
import {
  ConfigError,
  type Policy,
  type Store,
  type StoreBlock,
  type StoreRefund,
  type StoreRequest,
  type StoreResult,
} from '@sluice/core'
import { invalidOption, namesIn, OldestFirst } from '@sluice/core/adapter'
import type { Client } from 'memjs'
import { Counters } from './counters'
import { blockKey, bucketKey, partOf, type Part } from './layout'
import { Meters } from './meters'
import { resolveMemcachedOptions, type MemcachedStoreOptions } from './options'
import { blockedOutcomes, contention, decide, readKeys, readState, storeError } from './state'
import { CONFLICT, type Wire } from './wire'

export type {
  MemcachedClientStoreOptions,
  MemcachedServersStoreOptions,
  MemcachedStoreOptions,
} from './options'

/** Recent `now` per key, for `reset` (which is given no time); bounded, oldest out first. */
const RECENT_KEYS = 10_000

/**
 * Sluice's Store on Memcached (binary protocol, through memjs).
 *
 * - `fixed-window`, `sliding-window`: one counter per time bucket, read with one multi-get and
 *   raised with one atomic increment; a request that a concurrent increment pushed past the
 *   limit is rolled back with a decrement and rejected, so admitted requests never exceed it.
 * - `token-bucket`, `gcra`, `leaky-bucket`: one item per key and policy, rewritten with
 *   compare-and-swap, retried `casAttempts` times.
 * - `sliding-log`: refused (it needs a sorted set; use RedisStore).
 *
 * Decisions are core's transitions on the state read, so they equal MemoryStore's for the same
 * inputs. Time is the limiter's clock: memcached has none to offer.
 */
export class MemcachedStore implements Store {
  /** A log needs one timestamp per request and an atomic trim; memcached has neither. */
  readonly unsupportedAlgorithms: readonly string[] = namesIn('log')
  private readonly wire: Wire
  private readonly prefix: string
  private readonly casAttempts: number
  private readonly owned: Client | undefined
  private readonly recent = new Map<string, number>()
  private readonly oldest = new OldestFirst(this.recent)
  private readonly meters: Meters
  private readonly counters: Counters

  constructor(options: MemcachedStoreOptions) {
    const settings = resolveMemcachedOptions(options)
    this.wire = settings.wire
    this.owned = settings.owned
    this.prefix = settings.prefix
    this.casAttempts = settings.casAttempts
    this.meters = new Meters(settings.wire, settings.casAttempts)
    this.counters = new Counters(settings.wire)
  }

  async consume(request: StoreRequest): Promise<StoreResult> {
    try {
      const parts = this.parts(request.key, request.policies, request.now, request.keys)
      if (parts.every((part) => part.counter)) return await this.consumeOnce(request, parts)
      return await this.meters.serial(this.route(request.key), () =>
        this.consumeOnce(request, parts),
      )
    } catch (error) {
      throw storeError('consume', error)
    }
  }

  async peek({ key, keys, policies, cost, now, maxDelayMs }: StoreRequest): Promise<StoreResult> {
    try {
      const parts = this.parts(key, policies, now, keys)
      const block = blockKey(this.prefix, key)
      const items = await this.wire.getMulti(this.route(key), [...readKeys(parts, now), block])
      const blocked = blockedOutcomes(items.get(block), parts, now)
      if (blocked !== undefined) return { outcomes: blocked }
      return {
        outcomes: parts.map((part) =>
          decide(part, readState(part, items, now), now, cost, maxDelayMs),
        ),
      }
    } catch (error) {
      throw storeError('peek', error)
    }
  }

  /** With `at`: a refund; without: a reward, from the newest usage (see adjustCounters). */
  async refund({ key, keys, policies, cost, now, at }: StoreRefund): Promise<void> {
    try {
      const parts = this.parts(key, policies, now, keys)
      const route = this.route(key)
      const give = (part: Part, state: number[]) =>
        part.algorithm.refund(state, 0, now, part.policy, cost, at)
      await Promise.all([
        at === undefined
          ? this.counters.adjust(route, parts, now, give)
          : this.counters.refund(route, parts, now, cost, at),
        this.meters.serial(route, () => this.meters.update(route, parts, now, give, true, false)),
      ])
    } catch (error) {
      throw storeError('refund', error)
    }
  }

  /** Counters: read, core's penalize, then increment by what it added. Meters: by CAS. */
  async penalize({ key, keys, policies, cost, now }: StoreRequest): Promise<void> {
    try {
      const parts = this.parts(key, policies, now, keys)
      const route = this.route(key)
      const add = (part: Part, state: number[]) =>
        part.algorithm.penalize(state, 0, now, part.policy, cost)
      await Promise.all([
        this.counters.adjust(route, parts, now, add),
        this.meters.serial(route, () => this.meters.update(route, parts, now, add, true, true)),
      ])
    } catch (error) {
      throw storeError('penalize', error)
    }
  }

  /** One item per key, its end time as text, expiring then (plus a second: memcached ticks in s). */
  async block({ key, until, now }: StoreBlock): Promise<void> {
    try {
      if (typeof key !== 'string') invalidOption('key', key, 'a string')
      const route = this.route(key)
      const name = blockKey(this.prefix, key)
      if (until <= now) await this.wire.delete(route, name)
      else
        await this.wire.set(
          route,
          name,
          Buffer.from(String(until)),
          Math.ceil((until - now) / 1000) + 1,
        )
    } catch (error) {
      throw storeError('block', error)
    }
  }

  async reset(key: string, policies: readonly Policy[], keys?: readonly string[]): Promise<void> {
    try {
      const route = this.route(key)
      // A bucket's name holds its time, and reset is given none: delete the buckets that count
      // at the latest time this store saw the key, and at this host's clock (for keys other
      // processes wrote), one bucket either side for clock skew.
      const times = new Set([Date.now()])
      const seen = this.recent.get(key)
      if (seen !== undefined) times.add(seen)
      const names = new Set<string>([blockKey(this.prefix, key)])
      for (const [i, policy] of policies.entries()) {
        this.checkAlgorithm(policy)
        const part = partOf(this.prefix, policy, key, keys?.[i])
        if (!part.counter) {
          names.add(part.base)
          continue
        }
        for (const time of times) {
          const current = Math.floor(time / part.size)
          for (let bucket = Math.max(0, current - part.older - 1); bucket <= current + 1; bucket++)
            names.add(bucketKey(part, bucket))
        }
      }
      await Promise.all([...names].map((name) => this.wire.delete(route, name)))
    } catch (error) {
      throw storeError('reset', error)
    }
  }

  /** Quits the client the store created from `servers`; a client passed in is left open. */
  close(): Promise<void> {
    if (this.owned !== undefined) this.wire.quit()
    return Promise.resolve()
  }

  private async consumeOnce(
    { key, cost, now, maxDelayMs }: StoreRequest,
    parts: readonly Part[],
  ): Promise<StoreResult> {
    const route = this.route(key)
    // The key's block is read in the same multi-get: no extra round trip.
    const block = blockKey(this.prefix, key)
    const names = [...readKeys(parts, now), block]
    for (let attempt = 1; ; attempt++) {
      const items = await this.wire.getMulti(route, names)
      const blocked = blockedOutcomes(items.get(block), parts, now)
      if (blocked !== undefined) return { outcomes: blocked }
      const states = parts.map((part) => readState(part, items, now))
      const outcomes = parts.map((part, i) => decide(part, states[i], now, cost, maxDelayMs))
      if (cost === 0 || outcomes.some((o) => !o.allowed)) return { outcomes }

      // Meters first: a lost CAS race is retried from a fresh read, which counters could not be.
      const written = await this.meters.write(route, parts, states, items, now, cost)
      if (written === CONFLICT) {
        if (attempt >= this.casAttempts) throw contention(this.casAttempts)
        continue
      }
      if (await this.counters.increment(route, parts, states, outcomes, now, cost)) {
        return { outcomes }
      }
      // A concurrent increment pushed a counter past its limit: nothing of this request stays.
      await this.refundMeters(key, parts, now, cost, now, false).catch(() => undefined)
      return { outcomes }
    }
  }

  private refundMeters(
    key: string,
    parts: readonly Part[],
    now: number,
    cost: number,
    at: number,
    strict: boolean,
  ): Promise<void> {
    const meters = parts.filter((part) => !part.counter)
    return this.meters.refund(this.route(key), meters, now, cost, at, strict)
  }

  private parts(
    key: string,
    policies: readonly Policy[],
    now: number,
    keys?: readonly string[],
  ): Part[] {
    if (typeof key !== 'string') invalidOption('key', key, 'a string')
    const parts = policies.map((policy, i) => {
      this.checkAlgorithm(policy)
      return partOf(this.prefix, policy, key, keys?.[i])
    })
    if (parts.some((part) => part.counter)) this.remember(key, now)
    return parts
  }

  private checkAlgorithm(policy: Policy): void {
    if (this.unsupportedAlgorithms.includes(policy.algorithm)) {
      throw new ConfigError(
        `MemcachedStore does not support the '${policy.algorithm}' algorithm ` +
          '(it needs a sorted set of timestamps; use RedisStore or MemoryStore)',
      )
    }
  }

  /** Every item of one client key goes to the same server, so one multi-get reads them all. */
  private route(key: string): string {
    return `${this.prefix}:${key}`
  }

  private remember(key: string, now: number): void {
    const seen = this.recent.get(key)
    if (seen !== undefined) {
      if (seen >= now) return
      this.recent.delete(key)
    } else if (this.recent.size >= RECENT_KEYS) {
      this.oldest.evict()
    }
    this.recent.set(key, now)
  }
}
