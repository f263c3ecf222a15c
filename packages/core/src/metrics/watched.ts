/**
 * Owns what a recorder's `watch(name, source)` reads at collection time: a store's breaker and
 * calls in flight, a local tier's leases and store calls, an HTTP limiter's held and waiting
 * requests and concurrency slots. One list per recorder; labels are the names given to watch,
 * never keys, so cardinality is what the application chose.
 */
import { ConfigError } from '../errors'
import { storeHealth } from '../store-call/health'
import { refusedKeysOf } from './top-refused'
import { gateOf } from '../concurrency/limiter'
import type { LocalTierStats } from '../tier/local-tier'
import { BREAKER_STATE_VALUE, type WatchedMetric } from './names'

/** What an HTTP limiter reports of the requests it is holding right now. */
export interface HttpGauges {
  /** Admitted requests held for their shaping delay (leaky-bucket `delayMs`). */
  readonly held: number
  /** Requests waiting for their turn (`queue`, or a concurrency slot with `maxWaitMs`). */
  readonly waiting: number
  /** Concurrency slots held by requests of this process. */
  readonly slotsInFlight: number
}

/**
 * What `watch` accepts: a Store (its breaker), a local tier (its leases too), a Limiter (its
 * store, its concurrency slots and top refused keys) or an adapter's HTTP limiter (all that,
 * and its held and waiting requests). Anything else yields no reading.
 */
export type WatchSource = object

/** Each recorder's watch list, so an adapter's pipeline can add itself (see watchHttp). */
const lists = new WeakMap<object, WatchList>()

export function registerWatchList(recorder: object, list: WatchList): void {
  lists.set(recorder, list)
}

/**
 * An adapter's HTTP limiter whose `onDecision` is a Sluice recorder is watched by it, under the
 * framework's name (`express`, `express-2`, ...): its held and waiting requests and slots.
 */
export function watchHttp(hook: unknown, framework: string, limiter: object): void {
  const list = typeof hook === 'function' ? lists.get(hook) : undefined
  list?.addUnique(framework.toLowerCase().replace(/[^a-z0-9]+/g, '-'), limiter)
}

/** One value read from a watched source, with its extra labels. */
export interface Reading {
  readonly metric: WatchedMetric
  readonly value: number
  readonly labels?: Readonly<Record<string, string>>
}

function hasStats(source: object): source is { stats(): LocalTierStats } {
  return typeof (source as { stats?: unknown }).stats === 'function'
}

function hasGauges(source: object): source is { gauges(): HttpGauges } {
  return typeof (source as { gauges?: unknown }).gauges === 'function'
}

/** The store behind a source: the source itself, or its `store`. */
function storeOf(source: object): object {
  const store = (source as { store?: unknown }).store
  return typeof store === 'object' && store !== null && hasStats(source) === false ? store : source
}

/** Every reading of one source now (nothing for a store no limiter has used yet). */
export function readSource(source: object): Reading[] {
  const readings: Reading[] = []
  const store = storeOf(source)
  const health = storeHealth(store)
  if (health !== undefined) {
    readings.push({ metric: 'breakerState', value: BREAKER_STATE_VALUE[health.state] })
    readings.push({ metric: 'storeCallsInFlight', value: health.inFlight })
  }
  if (hasStats(store)) {
    const stats = store.stats()
    readings.push({ metric: 'tierLeasedUnits', value: stats.heldUnits })
    readings.push({
      metric: 'tierStoreCalls',
      value: stats.storeConsumes,
      labels: { call: 'consume' },
    })
    readings.push({
      metric: 'tierStoreCalls',
      value: stats.storeRefunds,
      labels: { call: 'refund' },
    })
    readings.push({ metric: 'tierLeasedDecisions', value: stats.leasedDecisions })
  }
  const refused =
    refusedKeysOf(source) ?? refusedKeysOf((source as { limiter?: object }).limiter ?? source)
  if (refused !== undefined) {
    for (const { key, count } of refused.shown(refused.settings.exported)) {
      readings.push({ metric: 'topRefused', value: count, labels: { key } })
    }
  }
  const gate = gateOf(source)
  if (gate !== undefined) {
    readings.push({ metric: 'slotsInFlight', value: gate.held })
    readings.push({ metric: 'requestsWaiting', value: gate.waiting })
    readings.push({ metric: 'releasesIgnored', value: gate.ignoredReleases })
  }
  if (hasGauges(source)) {
    const gauges = source.gauges()
    readings.push({ metric: 'requestsHeld', value: gauges.held })
    readings.push({ metric: 'requestsWaiting', value: gauges.waiting })
    readings.push({ metric: 'slotsInFlight', value: gauges.slotsInFlight })
  }
  return readings
}

/** The readings of one source; none when it throws and `failed` takes the error. */
function readingsOf(
  name: string,
  source: object,
  failed: ((name: string, error: unknown) => void) | undefined,
): Reading[] {
  if (failed === undefined) return readSource(source)
  try {
    return readSource(source)
  } catch (error) {
    failed(name, error)
    return []
  }
}

/** The sources of one recorder, by the name each was watched under. */
export class WatchList {
  /** Held weakly: a source the application drops leaves the metrics with it. */
  private readonly sources = new Map<string, WeakRef<object>>()
  /** Names given by `watchAs` so far, per base name. */
  private readonly taken = new Map<string, number>()

  add(name: unknown, source: unknown): void {
    if (typeof name !== 'string' || name === '') {
      throw new ConfigError(
        `watch(name, source): \`name\` must be a non-empty string; got ${String(name)}`,
      )
    }
    if (typeof source !== 'object' || source === null) {
      throw new ConfigError(
        `watch(${JSON.stringify(name)}, source): \`source\` must be a store, a local tier, a limiter or an HTTP limiter; got ${String(source)}`,
      )
    }
    this.sources.set(name, new WeakRef(source))
  }

  /** Watches `source` under `base`, or `base-2`, `base-3`... when `base` is taken already. */
  addUnique(base: string, source: object): void {
    const n = (this.taken.get(base) ?? 0) + 1
    this.taken.set(base, n)
    this.add(n === 1 ? base : `${base}-${n}`, source)
  }

  /**
   * Calls `observe` with every reading of every source, labelled by its name. Given `failed`, a
   * source whose reading throws is skipped and passed to it, so the other sources are still read;
   * an error of `observe` itself is the caller's instrument failing, so it is not caught here.
   */
  read(
    observe: (reading: Reading, name: string) => void,
    failed?: (name: string, error: unknown) => void,
  ): void {
    for (const [name, ref] of this.sources) {
      const source = ref.deref()
      if (source === undefined) this.sources.delete(name)
      else for (const r of readingsOf(name, source, failed)) observe(r, name)
    }
  }
}
