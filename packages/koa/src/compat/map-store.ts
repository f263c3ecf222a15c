/**
 * Owns koa-ratelimit's `db: new Map()`: each client's count in a window of its own from its
 * first request, kept in the Map the application owns (so `db.clear()` or `db.delete(key)`
 * forgets clients, as with the peer), and run through core's one adapter for increment-style
 * peer stores, as express-rate-limit's and @fastify/rate-limit's stores are.
 */
import type { IncrementCount, IncrementStore } from '@sluice/http'
import { IncrementStoreAdapter } from '@sluice/http'

/** What one client key holds in the Map. */
export interface MapCount {
  /** Requests counted in the window, rejected ones included (as koa-ratelimit counts). */
  count: number
  /** ms: when the window ends. */
  endsAt: number
}

/** Oldest entries looked at per call: more than the one a call can add, so a backlog shrinks. */
const SWEEP_PER_CALL = 4

function isCount(value: unknown): value is MapCount {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as MapCount).count === 'number' &&
    typeof (value as MapCount).endsAt === 'number'
  )
}

/**
 * The Map's counts, one entry per client key named `<prefix>:<key>`. An expired entry is
 * dropped when its key is next read, and each count sweeps the oldest entries (a new window is
 * inserted anew, so the Map's order is window order): an entry whose window ended is gone within
 * a few calls, so the Map holds about the clients of the last window. koa-ratelimit's Map keeps
 * every client ever seen; this one does not (docs/migration.md).
 */
function mapCounts(map: Map<string, unknown>, prefix: string): IncrementStore {
  const nameOf = (key: string) => `${prefix}:${key}`

  /** Drops up to SWEEP_PER_CALL of the oldest expired entries, stopping at the first live one. */
  function sweep(now: number): void {
    let looked = 0
    for (const [name, value] of map) {
      if (looked++ === SWEEP_PER_CALL) return
      // Values the application put in the Map (not this store's) are passed over.
      if (!name.startsWith(prefix) || !isCount(value)) continue
      if (value.endsAt > now) return
      map.delete(name)
    }
  }

  function live(key: string, now: number): MapCount | undefined {
    const value = map.get(nameOf(key))
    if (!isCount(value)) return undefined
    if (value.endsAt > now) return value
    map.delete(nameOf(key))
    return undefined
  }

  const countOf = (entry: MapCount, now: number): IncrementCount => ({
    hits: entry.count,
    resetMs: entry.endsAt - now,
  })

  return {
    description: "koa-ratelimit's db Map",
    async increment(key, policy, now) {
      // Refused requests sweep too: a flood of them still clears what has expired.
      sweep(now)
      let entry = live(key, now)
      if (entry === undefined) {
        entry = { count: 0, endsAt: now + policy.windowMs }
        map.set(nameOf(key), entry)
      }
      entry.count++
      return countOf(entry, now)
    },
    read: async (key, _policy, now) => {
      const entry = live(key, now)
      return entry === undefined ? undefined : countOf(entry, now)
    },
    decrement: async (key) => {
      const entry = map.get(nameOf(key))
      if (isCount(entry)) entry.count = Math.max(0, entry.count - 1)
    },
    resetKey: async (key) => {
      map.delete(nameOf(key))
    },
  }
}

/** A Store on a Map the caller owns (koa-ratelimit's `db`), through core's shared adapter. */
export class MapStore extends IncrementStoreAdapter {
  constructor(map: Map<string, unknown>, prefix: string) {
    super(mapCounts(map, prefix))
  }
}
