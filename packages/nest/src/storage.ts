/**
 * Owns @nestjs/throttler's storage contract: a user's own storage implements `increment` and
 * is used as it is (the guard then counts through it instead of a Sluice store).
 */

/** What `increment` answers. */
export interface ThrottlerStorageRecord {
  /** Requests counted for the key in its window, this one included. */
  totalHits: number
  /** Seconds until the window's count expires. */
  timeToExpire: number
  /** Whether the key is blocked (over its limit). */
  isBlocked: boolean
  /** Seconds until the block ends (0 when not blocked). */
  timeToBlockExpire: number
}

/** A counter store with @nestjs/throttler's interface. */
export interface ThrottlerStorage {
  /**
   * Counts one request for `key` (unless blocked); a key over `limit` is blocked for
   * `blockDuration` ms. `ttl` and `blockDuration` are in milliseconds.
   */
  increment(
    key: string,
    ttl: number,
    limit: number,
    blockDuration: number,
    throttlerName: string,
  ): Promise<ThrottlerStorageRecord>
}

/** The injection token of the storage (`@InjectThrottlerStorage()`). */
export const ThrottlerStorage = Symbol('ThrottlerStorage')
