/**
 * Owns running a peer library's increment-style store (express-rate-limit's, @fastify/rate-limit's)
 * as a Sluice Store, so a compat entry counts with it through the one pipeline. The peer store
 * counts and times each key's window itself (a fixed window, its own clock); this adapter turns
 * its count into outcomes, and maps the rest of the Store contract onto what the peer store has:
 * `refund` onto its `decrement`, `reset` onto its `resetKey`, `peek` onto its `read`. What it
 * has no method for is refused with an ERR_SLUICE_UNSUPPORTED error naming the store, never
 * silently skipped; `block` always is (no peer store keeps a block apart from its count).
 */
import {
  SluiceError,
  namesWhere,
  type Policy,
  type PolicyOutcome,
  type Store,
  type StoreRefund,
  type StoreRequest,
  type StoreResult,
} from '@sluice/core/web'

/** A key's count in a peer store. */
export interface IncrementCount {
  /** Hits in the key's current window, the one just counted included. */
  readonly hits: number
  /** ms until that window ends; undefined: a whole window from now. */
  readonly resetMs: number | undefined
}

/** A peer store reduced to what the adapter calls; each compat entry maps its peer's onto it. */
export interface IncrementStore {
  /** The store in an error message, e.g. 'an express-rate-limit store'. */
  readonly description: string
  /** Counts one hit for the key (`policy`: the limit and window the request is checked against). */
  increment(key: string, policy: Policy, now: number): Promise<IncrementCount>
  /** The key's count without counting; undefined when the key has none. */
  readonly read?: (key: string, policy: Policy, now: number) => Promise<IncrementCount | undefined>
  /** Takes one hit back. */
  readonly decrement?: (key: string) => Promise<void>
  /** Forgets the key. */
  readonly resetKey?: (key: string) => Promise<void>
}

/**
 * A peer store keeps one count per key and window: an algorithm whose state is more (the
 * registry's `oneCount`) is refused when the limiter is made.
 */
const OTHER_ALGORITHMS = namesWhere((row) => row.oneCount !== true)

/** One request's outcome: admitted while the hits, this one included, are within the limit. */
function outcomeOf(policy: Policy, count: IncrementCount): PolicyOutcome {
  const allowed = count.hits <= policy.limit
  const resetMs = count.resetMs === undefined ? policy.windowMs : Math.max(0, count.resetMs)
  return {
    allowed,
    remaining: Math.max(0, policy.limit - count.hits),
    resetMs,
    retryAfterMs: allowed ? 0 : resetMs,
    delayMs: 0,
  }
}

export class IncrementStoreAdapter implements Store {
  readonly unsupportedAlgorithms = OTHER_ALGORITHMS

  /** `onFailure` sees each failed count before the limiter does. */
  constructor(
    readonly peer: IncrementStore,
    private readonly onFailure?: (error: unknown) => void,
  ) {}

  async consume(request: StoreRequest): Promise<StoreResult> {
    let count: IncrementCount
    try {
      count = await this.peer.increment(request.key, request.policies[0]!, request.now)
    } catch (error) {
      this.onFailure?.(error)
      throw error
    }
    return this.outcomes(request, count)
  }

  async peek(request: StoreRequest): Promise<StoreResult> {
    const read = this.method('read', 'read a key without counting it')
    const count = await read(request.key, request.policies[0]!, request.now)
    return this.outcomes(request, count ?? { hits: 0, resetMs: undefined })
  }

  /**
   * Takes back one hit per unit, unless the window it was counted in is over (a peer store's
   * window may end sooner than a whole window after the hit; never later).
   */
  async refund(request: StoreRefund): Promise<void> {
    const decrement = this.method('decrement', 'give a hit back')
    const windowMs = Math.min(...request.policies.map((policy) => policy.windowMs))
    if (request.at !== undefined && request.now >= request.at + windowMs) return
    for (let i = 0; i < request.cost; i++) await decrement(request.key)
  }

  /** Counts `cost` more hits, as the peer store counts requests over the limit. */
  async penalize(request: StoreRequest): Promise<void> {
    for (let i = 0; i < request.cost; i++) {
      await this.peer.increment(request.key, request.policies[0]!, request.now)
    }
  }

  block(): Promise<void> {
    return Promise.reject(this.unsupported('block a key'))
  }

  async reset(key: string): Promise<void> {
    await this.method('resetKey', 'reset a key')(key)
  }

  private outcomes(request: StoreRequest, count: IncrementCount): StoreResult {
    return { outcomes: request.policies.map((policy) => outcomeOf(policy, count)) }
  }

  /** The peer's method, bound; an ERR_SLUICE_UNSUPPORTED error when the store has none. */
  private method<M extends 'read' | 'decrement' | 'resetKey'>(
    name: M,
    what: string,
  ): NonNullable<IncrementStore[M]> {
    const method = this.peer[name]
    if (method === undefined) throw this.unsupported(what)
    return method.bind(this.peer) as NonNullable<IncrementStore[M]>
  }

  private unsupported(what: string): SluiceError {
    return new SluiceError('ERR_SLUICE_UNSUPPORTED', `${this.peer.description} cannot ${what}`)
  }
}
