/**
 * Owns the compat entry's `MemoryStore`: express-rate-limit's store interface (`init`,
 * `increment`, `decrement`, `get`, `resetKey`, `resetAll`, `shutdown`) on Sluice's core, so
 * code that calls the store itself keeps working. Counting is core's: a fixed window from each
 * key's first hit, in core's bounded MemoryStore (its counts, expiry and memory bound); nothing
 * of express-rate-limit's store is copied. Given as `store`, the middleware counts with it as
 * with any express-rate-limit store (every hit counted, rejected ones too, as there).
 */
import { createLimiter, MemoryStore as CoreMemoryStore, type Limiter } from '@sluice/core'
import type { ClientRateLimitInfo, Options, Store } from './types'

/** express-rate-limit's default window. */
const DEFAULT_WINDOW_MS = 60_000
/** The count ceiling: never reached, so every increment counts (the middleware compares). */
const CEILING = 2 ** 30

/** express-rate-limit's MemoryStore, on Sluice's core. */
export class MemoryStore implements Store {
  /** Counts live in this process. */
  readonly localKeys = true
  private inner = new CoreMemoryStore()
  private windowMs = DEFAULT_WINDOW_MS
  private limiter: Limiter = this.limiterFor(this.inner)

  /**
   * Takes the middleware's `windowMs` (a value that is no positive whole number of ms keeps
   * the default, as express-rate-limit's validations warn and go on).
   */
  init(options: Pick<Options, 'windowMs'>): void {
    const windowMs = options.windowMs
    this.windowMs = Number.isSafeInteger(windowMs) && windowMs > 0 ? windowMs : DEFAULT_WINDOW_MS
    this.replaceInner()
  }

  async increment(key: string): Promise<ClientRateLimitInfo> {
    return this.infoOf(await this.limiter.consume(key))
  }

  /** Takes back one hit of the key's current window; never below 0. */
  async decrement(key: string): Promise<void> {
    await this.limiter.refund(key)
  }

  /** The key's hits and reset time; undefined when it has none in the current window. */
  async get(key: string): Promise<ClientRateLimitInfo | undefined> {
    const decision = await this.limiter.peek(key)
    return decision.remaining === decision.limit ? undefined : this.infoOf(decision)
  }

  async resetKey(key: string): Promise<void> {
    await this.limiter.reset(key)
  }

  /** Forgets every key. */
  resetAll(): void {
    this.replaceInner()
  }

  /** Stops the store's sweeper timer, so the process can exit. */
  async shutdown(): Promise<void> {
    await this.inner.close()
  }

  private infoOf(decision: {
    limit: number
    remaining: number
    at: number
    resetMs: number
  }): ClientRateLimitInfo {
    return {
      totalHits: decision.limit - decision.remaining,
      resetTime: new Date(decision.at + decision.resetMs),
    }
  }

  private replaceInner(): void {
    void this.inner.close()
    this.inner = new CoreMemoryStore()
    this.limiter = this.limiterFor(this.inner)
  }

  private limiterFor(store: CoreMemoryStore): Limiter {
    return createLimiter({
      store,
      algorithm: 'fixed-window',
      anchor: 'first-request',
      limit: CEILING,
      window: this.windowMs,
      // Read per call: tests and apps that fake Date see it, as with express-rate-limit.
      clock: () => Date.now(),
    })
  }
}
