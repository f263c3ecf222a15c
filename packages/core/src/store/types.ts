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
  /** Positive integer cost units. `peek` uses 0. */
  readonly cost: number
  /** The limiter's clock (ms). Stores with a clock of their own (Redis `TIME`) may use that instead. */
  readonly now: number
}

/** A refund of `cost` units that `consume` took at time `at` (skipSuccessfulRequests and the like). */
export interface StoreRefund extends StoreRequest {
  /** When the refunded request was admitted; nothing is refunded into a window that has since reset. */
  readonly at: number
}

export interface StoreResult {
  /** One outcome per policy, in the order of `request.policies`. */
  readonly outcomes: readonly PolicyOutcome[]
}

/**
 * THE store contract. MemoryStore, RedisStore and MemcachedStore implement it, and the store
 * conformance suite in packages/testkit checks each against the same cases.
 */
export interface Store {
  /**
   * In-process stores may also answer synchronously (MemoryStore does): the limiter then skips
   * a promise hop and the timeout on its hot path. Same contract as `consume`.
   */
  consumeNow?(request: StoreRequest): readonly PolicyOutcome[]
  /** Checks every policy and, when all admit, takes `cost` from each, atomically. */
  consume(request: StoreRequest): Promise<StoreResult>
  /** The outcomes a request of cost `request.cost` would get now (0 for "how much is left"); never changes state. */
  peek(request: StoreRequest): Promise<StoreResult>
  /** Gives back units taken by an earlier consume; never below empty, never into a window that has reset. */
  refund(request: StoreRefund): Promise<void>
  /** Forgets every policy's state for the key. */
  reset(key: string, policies: readonly Policy[]): Promise<void>
  /** True for in-process stores (MemoryStore): calls cannot hang, so the limiter arms no timeout. */
  readonly local?: boolean
  /** Algorithms this store cannot run; a limiter refuses them at creation. Default: none. */
  readonly unsupportedAlgorithms?: readonly string[]
  /** Releases timers and connections the store itself opened. */
  close?(): Promise<void>
}
