/**
 * Owns the block cache: keys a shared store refused recently, answered in-process until their
 * retry time (RedisStore, DurableObjectStore).
 */
import { OldestFirst } from '../oldest-first'
import type { PolicyOutcome } from '../policy'

interface Blocked {
  /** Which policies (ids, limits, bursts) the outcomes are for. */
  readonly signature: string
  /** Local time the outcomes were true at. */
  readonly at: number
  /** Local time from which the request may pass again. */
  readonly until: number
  readonly outcomes: readonly PolicyOutcome[]
}

/**
 * Keys known to be over their limit until a given time, so a flood from one client is
 * answered without a round trip to Redis. A bounded LRU (a Map in insertion order: O(1) get,
 * touch and evict), one entry per key; an entry only answers for the same policies (id,
 * limit and burst, so a changed or throttled limit goes to Redis).
 *
 * Only cost-1 rejections where every policy rejected are kept: then, until the soonest of
 * their retry times, Redis would answer exactly the same with `retryAfterMs` and `resetMs`
 * counting down and `remaining` 0 (no other request can make room except a refund or reset,
 * which clear the entry).
 */
export class BlockCache {
  private readonly entries = new Map<string, Blocked>()
  private readonly oldest = new OldestFirst(this.entries)

  constructor(private readonly maxKeys: number) {}

  /** The outcomes Redis would give a cost-1 request at `now`, or undefined to ask Redis. */
  get(key: string, signature: string, now: number): PolicyOutcome[] | undefined {
    const entry = this.entries.get(key)
    if (entry === undefined) return undefined
    if (now >= entry.until || now < entry.at || entry.signature !== signature) {
      if (now >= entry.until) this.entries.delete(key)
      return undefined
    }
    // Touch: most recently used keys are the last to go.
    this.entries.delete(key)
    this.entries.set(key, entry)
    // With server time `now` is the local monotonic clock, a fraction of a ms: every time a user
    // sees is a whole ms, rounded up (never sooner than Redis would say).
    const elapsed = now - entry.at
    return entry.outcomes.map((o) => ({
      allowed: false,
      remaining: 0,
      resetMs: Math.max(0, Math.ceil(o.resetMs - elapsed)),
      retryAfterMs: Math.ceil(o.retryAfterMs - elapsed),
      delayMs: 0,
    }))
  }

  /** Remembers a cost-1 request's outcomes seen at `at`, when every policy rejected it. */
  remember(key: string, signature: string, at: number, outcomes: readonly PolicyOutcome[]): void {
    let soonest = Infinity
    for (const o of outcomes) {
      if (o.allowed || o.remaining !== 0) return
      if (o.retryAfterMs < soonest) soonest = o.retryAfterMs
    }
    // Nothing to save for a wait under 1 ms; Infinity (cost over capacity) cannot happen at cost 1.
    if (!(soonest >= 1) || soonest === Infinity) return
    this.entries.delete(key)
    if (this.entries.size >= this.maxKeys) this.oldest.evict()
    this.entries.set(key, { signature, at, until: at + soonest, outcomes })
  }

  forget(key: string): void {
    this.entries.delete(key)
  }

  clear(): void {
    this.entries.clear()
  }

  get size(): number {
    return this.entries.size
  }
}
