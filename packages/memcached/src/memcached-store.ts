/**
 * Owns MemcachedStore: the Store contract over memcached, counters by increment and meters by
 * compare-and-swap.
 */
import {
  ConfigError,
  StoreError,
  invalidOption,
  withoutStack,
  type Policy,
  type PolicyOutcome,
  type Store,
  type StoreBlock,
  type StoreRefund,
  type StoreRequest,
  type StoreResult,
} from '@sluice/core'
import { Client, type ClientOptions, type ServerOptions } from 'memjs'
import {
  blockKey,
  bucketKey,
  bucketsAt,
  counterCounts,
  counterState,
  counterTtlSeconds,
  decodeCounter,
  decodeMeter,
  encodeMeter,
  partOf,
  type Part,
} from './layout'
import { CONFLICT, Wire, type Item, type MemjsClient } from './wire'

interface CommonOptions {
  /**
   * Namespace of every item the store writes: `<prefix>:<policy id>:<key>[:<bucket>]`.
   * @default 'sluice'
   */
  prefix?: string
  /**
   * Compare-and-swap attempts for `token-bucket`, `gcra` and `leaky-bucket` before the call
   * fails with a StoreError (so the limiter's `onStoreError` decides): each retry means another
   * process changed the same key between our read and our write.
   * @default 10
   */
  casAttempts?: number
}

export interface MemcachedClientStoreOptions extends CommonOptions {
  /**
   * A memjs client you own (`memjs.Client.create('host:11211')`). The store never closes it.
   * Its `timeout` (s) bounds each request; `failover` is honoured; `retries` is not used (see
   * docs/memcached.md).
   * @default undefined (then `servers` is required)
   */
  client: MemjsClient
  servers?: never
  clientOptions?: never
}

export interface MemcachedServersStoreOptions extends CommonOptions {
  /**
   * `'host:port,host:port'`: the store creates a memjs client on these and `close()` quits it.
   * @default undefined (then `client` is required)
   */
  servers: string
  client?: never
  /**
   * memjs options for the client the store creates.
   * @default { timeout: 0.5, conntimeout: 1, keepAlive: true, retries: 0 }
   */
  clientOptions?: ClientOptions & ServerOptions
}

export type MemcachedStoreOptions = MemcachedClientStoreOptions | MemcachedServersStoreOptions

/** Options of the client the store creates from `servers` (memjs's own `timeout` is 0.5 s too). */
const CLIENT_DEFAULTS: ClientOptions & ServerOptions = {
  timeout: 0.5,
  // memjs waits 2 x timeout to connect by default; a dead host should fail as fast as a request.
  conntimeout: 1,
  keepAlive: true,
  // memjs logs every failed request it retries itself; the store never asks it to retry.
  retries: 0,
}

/** Recent `now` per key, for `reset` (which is given no time); bounded, oldest out first. */
const RECENT_KEYS = 10_000

type MeterWrite = { key: string; state: number[]; cas: Buffer | undefined; parts: Part[] }

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
  /** sliding-log needs one timestamp per request and an atomic trim; memcached has neither. */
  readonly unsupportedAlgorithms: readonly string[] = ['sliding-log']
  private readonly wire: Wire
  private readonly prefix: string
  private readonly casAttempts: number
  private readonly owned: Client | undefined
  private readonly recent = new Map<string, number>()
  /** Tail of the queue of meter updates per key in this process (see `serial`). */
  private readonly queues = new Map<string, Promise<void>>()

  constructor(options: MemcachedStoreOptions) {
    if (options === null || typeof options !== 'object') {
      invalidOption('options', options, 'an object with `client` or `servers`')
    }
    const { client, servers } = options
    if ((client === undefined) === (servers === undefined)) {
      throw new ConfigError(
        'MemcachedStore needs exactly one of `client` (a memjs client) or `servers` ("host:port,...")',
      )
    }
    if (client !== undefined) {
      if (typeof client !== 'object' || client === null || typeof client.server !== 'function') {
        invalidOption('client', client, 'a memjs Client')
      }
      this.wire = new Wire(client)
    } else {
      if (typeof servers !== 'string' || servers.trim() === '') {
        invalidOption('servers', servers, 'a non-empty "host:port,host:port" string')
      }
      const clientOptions = (options as MemcachedServersStoreOptions).clientOptions
      this.owned = Client.create(servers, { ...CLIENT_DEFAULTS, ...clientOptions })
      this.wire = new Wire(this.owned)
    }
    const prefix = options.prefix ?? 'sluice'
    if (typeof prefix !== 'string') invalidOption('prefix', prefix, 'a string')
    this.prefix = prefix
    const attempts = options.casAttempts ?? 10
    if (!Number.isSafeInteger(attempts) || attempts < 1) {
      invalidOption('casAttempts', attempts, 'a positive integer')
    }
    this.casAttempts = attempts
  }

  async consume(request: StoreRequest): Promise<StoreResult> {
    try {
      const parts = this.parts(request.key, request.policies, request.now, request.keys)
      if (parts.every((part) => part.counter)) return await this.consumeOnce(request, parts)
      return await this.serial(this.route(request.key), () => this.consumeOnce(request, parts))
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
          ? this.adjustCounters(route, parts, now, give)
          : this.refundCounters(key, parts, now, cost, at),
        this.serial(route, () => this.updateMeters(route, parts, now, give, true, false)),
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
        this.adjustCounters(route, parts, now, add),
        this.serial(route, () => this.updateMeters(route, parts, now, add, true, true)),
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

  /**
   * Runs meter updates of one key one after another within this process. Without it, requests
   * in flight together on a hot key would all read the same CAS value and all but one lose the
   * race, over and over (measured: most calls failing with 50 in flight); compare-and-swap is
   * then left to arbitrate between processes only.
   */
  private serial<T>(route: string, task: () => Promise<T>): Promise<T> {
    const previous = this.queues.get(route)
    const run = previous === undefined ? task() : previous.then(task)
    const tail = run.then(
      () => undefined,
      () => undefined,
    )
    this.queues.set(route, tail)
    void tail.then(() => {
      if (this.queues.get(route) === tail) this.queues.delete(route)
    })
    return run
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
      const written = await this.writeMeters(route, parts, states, items, now, cost)
      if (written === CONFLICT) {
        if (attempt >= this.casAttempts) throw contention(this.casAttempts)
        continue
      }
      if (await this.incrementCounters(route, parts, states, outcomes, now, cost)) {
        return { outcomes }
      }
      // A concurrent increment pushed a counter past its limit: nothing of this request stays.
      await this.refundMeters(key, parts, now, cost, now, false).catch(() => undefined)
      return { outcomes }
    }
  }

  /**
   * Applies the request to every meter (policies sharing an id share an item) and writes each
   * item back by CAS. On a lost race the items already written are given back; CONFLICT then.
   */
  private async writeMeters(
    route: string,
    parts: readonly Part[],
    states: readonly number[][],
    items: ReadonlyMap<string, Item>,
    now: number,
    cost: number,
  ): Promise<void | typeof CONFLICT> {
    const writes = new Map<string, MeterWrite>()
    parts.forEach((part, i) => {
      if (part.counter) return
      let write = writes.get(part.base)
      if (write === undefined) {
        write = { key: part.base, state: states[i], cas: items.get(part.base)?.cas, parts: [] }
        writes.set(part.base, write)
      }
      part.algorithm.apply(write.state, 0, now, part.policy, cost)
      write.parts.push(part)
    })
    if (writes.size === 0) return
    const results = await Promise.all(
      [...writes.values()].map((write) =>
        this.wire.compareAndSet(
          route,
          write.key,
          encodeMeter(write.state),
          meterTtl(write, now),
          write.cas,
        ),
      ),
    )
    if (results.every((result) => result === true)) return
    const won = [...writes.values()].filter((_, i) => results[i] === true).flatMap((w) => w.parts)
    await this.refundMeterParts(route, won, now, cost, now, false).catch(() => undefined)
    return CONFLICT
  }

  /**
   * Raises every counter's current bucket by `cost`. True when each still admits the request
   * with what the increments returned; otherwise the increments are taken back and the
   * counters' outcomes replaced by rejections computed from the counts seen.
   */
  private async incrementCounters(
    route: string,
    parts: readonly Part[],
    states: readonly number[][],
    outcomes: PolicyOutcome[],
    now: number,
    cost: number,
  ): Promise<boolean> {
    const counters = parts.flatMap((part, i) => (part.counter ? [i] : []))
    if (counters.length === 0) return true
    const names = counters.map((i) => bucketKey(parts[i], Math.floor(now / parts[i].size)))
    const values = await Promise.all(
      counters.map((i, n) =>
        this.wire.increment(route, names[n], cost, counterTtlSeconds(parts[i].policy)),
      ),
    )
    // What each increment should return if no other process touched the bucket since the read
    // (policies sharing an id raise the same bucket once each).
    const raised = new Map<string, number>()
    let admitted = true
    counters.forEach((i, n) => {
      const ours = (raised.get(names[n]) ?? 0) + cost
      raised.set(names[n], ours)
      const part = parts[i]
      const before = currentCount(part, states[i])
      if (values[n] === before + ours) return
      // Others counted in between: decide again on the count as it stood just before ours.
      const state = states[i].slice()
      setCurrentCount(part, state, Math.max(0, values[n] - ours))
      const again = decide(part, state, now, cost)
      outcomes[i] = again
      if (!again.allowed) admitted = false
    })
    if (admitted) return true
    await Promise.all(names.map((name) => this.wire.decrement(route, name, cost))).catch(
      () => undefined,
    )
    return false
  }

  private async refundCounters(
    key: string,
    parts: readonly Part[],
    now: number,
    cost: number,
    at: number,
  ): Promise<void> {
    const route = this.route(key)
    const names: string[] = []
    for (const part of parts) {
      if (!part.counter) continue
      const bucket = Math.floor(at / part.size)
      const current = Math.floor(now / part.size)
      // Never into a bucket that no longer counts (a window that has reset) or the future.
      if (bucket < current - part.older || bucket > current) continue
      names.push(bucketKey(part, bucket))
    }
    await Promise.all(names.map((name) => this.wire.decrement(route, name, cost)))
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
    return this.refundMeterParts(this.route(key), meters, now, cost, at, strict)
  }

  /**
   * Penalties and rewards on counters: core's transition on the counts read, then each bucket
   * raised (increment) or lowered (decrement, which stops at 0) by the difference. Not atomic
   * with other processes' increments: a concurrent request may land between the read and the
   * write, so a penalty can overshoot full by what was admitted in between (docs/memcached.md).
   */
  private async adjustCounters(
    route: string,
    parts: readonly Part[],
    now: number,
    change: (part: Part, state: number[]) => void,
  ): Promise<void> {
    const counters = parts.filter((part) => part.counter)
    if (counters.length === 0) return
    const items = await this.wire.getMulti(route, readKeys(counters, now))
    const deltas = new Map<string, { delta: number; part: Part }>()
    for (const part of counters) {
      const state = readState(part, items, now)
      const before = counterCounts(part, state, now)
      change(part, state)
      for (const [bucket, count] of counterCounts(part, state, now)) {
        const delta = count - (before.get(bucket) ?? 0)
        if (delta === 0) continue
        const name = bucketKey(part, bucket)
        const entry = deltas.get(name) ?? { delta: 0, part }
        entry.delta += delta
        deltas.set(name, entry)
      }
    }
    await Promise.all(
      [...deltas].map(([name, { delta, part }]) =>
        delta > 0
          ? this.wire.increment(route, name, delta, counterTtlSeconds(part.policy))
          : this.wire.decrement(route, name, -delta),
      ),
    )
  }

  /**
   * Applies `change` to every meter by CAS, retrying the items that lost a race; `create`: a
   * missing item starts from the empty state (penalize) instead of being left alone (reward).
   */
  private async updateMeters(
    route: string,
    parts: readonly Part[],
    now: number,
    change: (part: Part, state: number[]) => void,
    strict: boolean,
    create: boolean,
  ): Promise<void> {
    let pending = parts.filter((part) => !part.counter)
    for (let attempt = 1; pending.length > 0; attempt++) {
      if (attempt > this.casAttempts) {
        if (strict) throw contention(this.casAttempts)
        return
      }
      const items = await this.wire.getMulti(route, [...new Set(pending.map((p) => p.base))])
      const writes = new Map<string, MeterWrite>()
      for (const part of pending) {
        const item = items.get(part.base)
        if (item === undefined && !create) continue
        let write = writes.get(part.base)
        if (write === undefined) {
          const state =
            item === undefined
              ? new Array<number>(part.algorithm.slots(part.policy)).fill(0)
              : meterState(part, item)
          write = { key: part.base, state, cas: item?.cas, parts: [] }
          writes.set(part.base, write)
        }
        change(part, write.state)
        write.parts.push(part)
      }
      const list = [...writes.values()]
      const results = await Promise.all(
        list.map((write) =>
          this.wire.compareAndSet(
            route,
            write.key,
            encodeMeter(write.state),
            meterTtl(write, now),
            write.cas,
          ),
        ),
      )
      pending = list.filter((_, i) => results[i] !== true).flatMap((write) => write.parts)
    }
  }

  /**
   * Gives `cost` back to each meter by CAS, retrying the items that lost a race. `strict`
   * (a caller's refund) reports contention; a rollback gives up quietly, leaving the meter
   * fuller than it should be: that can only reject more, never admit more.
   */
  private refundMeterParts(
    route: string,
    meters: readonly Part[],
    now: number,
    cost: number,
    at: number | undefined,
    strict: boolean,
  ): Promise<void> {
    // Nothing to give back to a meter that is gone (expired, reset): no item is created.
    return this.updateMeters(
      route,
      meters,
      now,
      (part, state) => part.algorithm.refund(state, 0, now, part.policy, cost, at),
      strict,
      false,
    )
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
      this.recent.delete(this.recent.keys().next().value as string)
    }
    this.recent.set(key, now)
  }
}

/** The items a request reads: the buckets that count at `now`, and each meter's item. */
function readKeys(parts: readonly Part[], now: number): string[] {
  const names = new Set<string>()
  for (const part of parts) {
    if (!part.counter) names.add(part.base)
    else for (const bucket of bucketsAt(part, now)) names.add(bucketKey(part, bucket))
  }
  return [...names]
}

function readState(part: Part, items: ReadonlyMap<string, Item>, now: number): number[] {
  if (!part.counter) {
    const item = items.get(part.base)
    return item === undefined
      ? new Array<number>(part.algorithm.slots(part.policy)).fill(0)
      : meterState(part, item)
  }
  return counterState(part, now, (bucket) => {
    const item = items.get(bucketKey(part, bucket))
    if (item === undefined) return 0
    const count = decodeCounter(item.value)
    if (count === undefined) throw foreignItem(bucketKey(part, bucket))
    return count
  })
}

function meterState(part: Part, item: Item): number[] {
  const state = decodeMeter(item.value, part.algorithm.slots(part.policy))
  if (state === undefined) throw foreignItem(part.base)
  return state
}

function decide(
  part: Part,
  state: number[],
  now: number,
  cost: number,
  maxDelayMs?: number,
): PolicyOutcome {
  const out = { allowed: false, remaining: 0, resetMs: 0, retryAfterMs: 0, delayMs: 0 }
  part.algorithm.decide(state, 0, now, part.policy, cost, out, maxDelayMs)
  return out
}

/** Every policy's answer while the key's block (an item holding its end time) holds at `now`. */
function blockedOutcomes(
  item: Item | undefined,
  parts: readonly Part[],
  now: number,
): PolicyOutcome[] | undefined {
  if (item === undefined) return undefined
  const until = Number(item.value.toString('latin1'))
  if (!(until > now)) return undefined
  const wait = until - now
  return parts.map(() => ({
    allowed: false,
    remaining: 0,
    resetMs: wait,
    retryAfterMs: wait,
    delayMs: 0,
  }))
}

/** Index of the current bucket's count in a counter state (see counterState). */
function currentSlot(part: Part, state: readonly number[]): number {
  return part.policy.algorithm === 'fixed-window' ? 1 : 1 + (state[0] % (part.policy.precision + 1))
}

function currentCount(part: Part, state: readonly number[]): number {
  return state[currentSlot(part, state)]
}

function setCurrentCount(part: Part, state: number[], count: number): void {
  state[currentSlot(part, state)] = count
}

/** Item lifetime: until the state is empty again (core's expiresAt), plus a second of slack. */
function meterTtl(write: MeterWrite, now: number): number {
  let until = now
  for (const part of write.parts)
    until = Math.max(until, part.algorithm.expiresAt(write.state, 0, part.policy))
  return (until - now) / 1000 + 1
}

function contention(attempts: number): StoreError {
  return new StoreError(
    `MemcachedStore: another process changed the same key in each of ${attempts} ` +
      'compare-and-swap attempts (raise `casAttempts`, or use RedisStore for hot keys)',
  )
}

function foreignItem(name: string): Error {
  return new Error(`item ${JSON.stringify(name)} holds a value this store did not write`)
}

function storeError(operation: string, error: unknown): Error {
  if (error instanceof StoreError || error instanceof ConfigError) return error
  const reason = error instanceof Error ? error.message : String(error)
  // The cause keeps memjs's stack; a hung server fails thousands of calls at once.
  return withoutStack(
    () => new StoreError(`MemcachedStore ${operation} failed: ${reason}`, { cause: error }),
  )
}
