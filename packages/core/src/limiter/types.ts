/**
 * Owns the limiter's contract: the Limiter interface, the options of its wait and refund, and
 * the direct consume the HTTP pipeline calls. A leaf, so that create-limiter.ts and the pieces
 * it composes (limiter/, concurrency/) all read it without importing one another.
 */
import type { Clock } from '../clock'
import type { Decision } from '../decision'
import type { RefusedKey } from '../metrics/top-refused'
import type { ConsumeOptions, WaitUntil } from '../options'
import type { Policy } from '../policy'
import type { Store } from '../store/types'

export interface WaitOptions {
  /** Units to take. @default 1 */
  cost?: number
  /**
   * The longest the caller will wait: a request whose slot is further away resolves as rejected
   * (`allowed: false`) at once, taking nothing. @default the longest window of the limiter's policies
   */
  maxWaitMs?: number
  /** Aborting gives the reserved slot back and rejects the wait with the signal's reason. @default undefined */
  signal?: AbortSignal
  /**
   * Keeps a timed-out store call's late reply and its refund running where the runtime cancels
   * I/O pending after the response (Cloudflare Workers): see ConsumeOptions.waitUntil.
   * @default undefined
   */
  waitUntil?: WaitUntil
}

export interface RefundOptions {
  /** Units to give back. @default 1 */
  cost?: number
  /** When the refunded request was consumed (ms on the limiter's clock). @default now */
  at?: number
}

/** Limits keys against its policies through its store. */
export interface Limiter {
  /** Decides one request of `cost` (default 1) and, when admitted, counts it. */
  consume(key: string, options?: ConsumeOptions): Promise<Decision>
  /** What a request would see now (`remaining` is what is left), counting nothing. Same as `get`. */
  peek(key: string): Promise<Decision>
  /** The key's state without consuming: what a request would see now (`remaining` is what is left). */
  get(key: string): Promise<Decision>
  /**
   * Refuses the key for `ms` whatever its counters say (kept apart from them, so consumes do not
   * overwrite it); a later block replaces an earlier one; `reset` lifts it. The block ends at
   * the first whole ms at or after `now + ms` (every store keeps whole ms), and at the latest
   * at 2^53 - 1 ms after the clock's zero: a longer one is a block for good.
   */
  block(key: string, ms: number): Promise<void>
  /** Takes `cost` units from every policy whatever the limit says, never beyond full. */
  penalize(key: string, cost?: number): Promise<void>
  /** Gives `cost` units back to every policy, from the newest usage, never below empty. */
  reward(key: string, cost?: number): Promise<void>
  /**
   * Reserves the next slot in one store call and resolves with the Decision once the caller may
   * go (after its `delayMs`). A slot further away than `maxWaitMs` resolves as rejected at once,
   * taking nothing; an aborted `signal` gives the slot back and rejects. Meter algorithms only
   * (token-bucket, leaky-bucket, gcra): a limiter with a counter policy throws a ConfigError.
   */
  wait(key: string, options?: WaitOptions): Promise<Decision>
  /** Gives back units an admitted request took (e.g. skipSuccessfulRequests); nothing into a reset window. */
  refund(key: string, options?: RefundOptions): Promise<void>
  /** Forgets the key's state under every policy. */
  reset(key: string): Promise<void>
  /**
   * The `n` keys this limiter refused most in the current and the last interval, most first,
   * as given to `consume` (not hashed). Needs the `topRefused` option (else a ConfigError).
   * @param n @default 10
   */
  topRefused(n?: number): RefusedKey[]
  /** The nominal policies, in the order given. */
  readonly policies: readonly Policy[]
  readonly store: Store
  readonly clock: Clock
}

/**
 * What `consume(key, { cost, waitUntil })` decides: at once when the store is in-process, else
 * its promise. Neither `cost` nor `waitUntil` is checked here: the HTTP pipeline checks its
 * cost option once and passes its adapter's own `waitUntil`.
 */
export type DirectConsume = (
  key: string,
  cost: number,
  waitUntil?: WaitUntil,
) => Decision | Promise<Decision>
