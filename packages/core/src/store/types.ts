/**
 * Owns the Store contract every store implements (memory, Redis, memcached, custom).
 */
import type { SlotStore } from '../concurrency/slots'
import type { Decision } from '../decision'
import type { Policy, PolicyOutcome } from '../policy'

/**
 * One atomic step on one key: every policy is checked, and only when all admit the request is
 * the cost taken from each (all-or-nothing). A store implements it in one round trip
 * (RedisStore: one Lua script call). A rejected request changes no state.
 */
export interface StoreRequest {
  /** The client key, already prefixed by nothing: stores add their own namespace. */
  readonly key: string
  /** The policies to apply, in order; a store keeps state per (key, policy.id). */
  readonly policies: readonly Policy[]
  /**
   * Rules: policy i keeps its state under `keys[i]` within the group `key` (state identity
   * (key, keys[i], policy.id)), and all of them change together, atomically. RedisStore puts
   * `key` in the hash tag, so one group is one Cluster slot. Absent: every policy uses `key`.
   */
  readonly keys?: readonly string[]
  /** Positive integer cost units. `peek` uses 0. */
  readonly cost: number
  /** The limiter's clock (ms). Stores with a clock of their own (Redis `TIME`) may use that instead. */
  readonly now: number
  /**
   * `limiter.wait`: a request that does not fit now is still admitted when it would fit within
   * this many ms, reserving its place (the meter's backlog grows past its capacity by at most
   * maxDelayMs x limit / window); the outcome's `delayMs` says how long the caller must wait.
   * Meter algorithms only (token-bucket, leaky-bucket, gcra); absent or 0: no reservation.
   */
  readonly maxDelayMs?: number
}

/** Gives back `cost` units (skipSuccessfulRequests, `limiter.reward`, an aborted `wait`). */
export interface StoreRefund extends StoreRequest {
  /**
   * When the refunded request was admitted: nothing is refunded into a window that has since
   * reset. Absent (`reward`): taken from the newest usage, never below empty.
   */
  readonly at?: number
  /**
   * `now` and `at` are on the store's own clock: the refund of a charge made at a StoreResult's
   * `at` (a late reply's, a lease's). A store with a clock of its own (`ownClock`) then decides
   * the refund at `now` as given instead of reading its clock, so it lands exactly where the
   * charge did (the same sliding-log timestamps, window or bucket). Other stores ignore it.
   */
  readonly storeClock?: boolean
}

/** `limiter.block`: the key is refused until `until`, whatever its counters say. */
export interface StoreBlock {
  readonly key: string
  /** ms on the same clock as `now`; a later block replaces an earlier one, 0 lifts it. */
  readonly until: number
  readonly now: number
}

export interface StoreResult {
  /** One outcome per policy, in the order of `request.policies`. */
  readonly outcomes: readonly PolicyOutcome[]
  /**
   * When an admitted request was counted, on the store's own clock, where that is not the
   * request's `now` (RedisStore with `time: 'server'`: Redis `TIME` as the script read it).
   * Refunding that charge exactly (a late reply's) takes this as `at` and `now`, with
   * `storeClock`. Absent: the charge was made at the request's `now`.
   */
  readonly at?: number
}

/**
 * THE store contract. MemoryStore, RedisStore and MemcachedStore implement it, and the store
 * conformance suite in packages/testkit checks each against the same cases.
 */
export interface Store {
  /**
   * In-process stores may also answer synchronously (MemoryStore does): the limiter then skips
   * a promise hop and the timeout on its hot path. Same contract as `consume`, except that the
   * array returned may be reused by the store's next call: read it before calling again.
   */
  consumeNow?(request: StoreRequest): readonly PolicyOutcome[]
  /**
   * With `consumeNow`, an in-process store may also decide a single policy without rule keys,
   * and without a request object or an array: the limiter's hot path for one limit. The
   * answer is that policy's decision (the limiter returns it as is), a new object per call.
   */
  consumeOneNow?(
    key: string,
    policy: Policy,
    cost: number,
    now: number,
    maxDelayMs: number,
  ): Decision
  /** Checks every policy and, when all admit, takes `cost` from each, atomically. */
  consume(request: StoreRequest): Promise<StoreResult>
  /** The outcomes a request of cost `request.cost` would get now (0 for "how much is left"); never changes state. */
  peek(request: StoreRequest): Promise<StoreResult>
  /** Gives back units taken by an earlier consume; never below empty, never into a window that has reset. */
  refund(request: StoreRefund): Promise<void>
  /** Adds `cost` to every policy's usage whatever the limit says, never beyond full (`limiter.penalize`). */
  penalize(request: StoreRequest): Promise<void>
  /**
   * Refuses the key until `until`. Kept apart from the counters (a consume does not overwrite
   * it); while it holds, consume and peek answer allowed: false with retryAfterMs = resetMs =
   * until - now, remaining 0, delayMs 0 for every policy, and change nothing. `reset` lifts it.
   * It is the group `key` that is blocked, whatever the request's `keys`.
   */
  block(request: StoreBlock): Promise<void>
  /**
   * Forgets every policy's state for the key, and lifts its block. `keys`: the per-policy state
   * keys the state was kept under (as in StoreRequest.keys); absent: the key itself.
   */
  reset(key: string, policies: readonly Policy[], keys?: readonly string[]): Promise<void>
  /**
   * True when the store decides with a clock of its own (RedisStore with `time: 'server'`), not
   * the request's `now`: a late reply's charge is refunded at the StoreResult's `at` when the
   * store reports it, else as made at the reply's arrival.
   */
  readonly ownClock?: boolean
  /** True for in-process stores (MemoryStore): calls cannot hang, so the limiter arms no timeout. */
  readonly local?: boolean
  /** The slots of `concurrency` limits (concurrency/slots.ts); a store without them refuses those limits. */
  readonly slots?: SlotStore
  /** Algorithms this store cannot run; a limiter refuses them at creation. Default: none. */
  readonly unsupportedAlgorithms?: readonly string[]
  /**
   * A store with rules about the policies it runs (localTier: a lease must end within its
   * window) throws a ConfigError naming the option, its value and the rule; a limiter calls it
   * for each policy at creation.
   */
  checkPolicy?(policy: Policy): void
  /** Releases timers and connections the store itself opened. */
  close?(): Promise<void>
}
