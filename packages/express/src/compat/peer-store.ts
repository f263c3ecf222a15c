/**
 * Owns running an express-rate-limit store (its `increment/decrement/resetKey/get` interface,
 * or the pre-v6 `incr` one) as a Sluice Store, so the one core pipeline counts with it.
 */
import { SluiceError, type Policy, type PolicyOutcome } from '@sluice/core'
import type {
  Store as SluiceStore,
  StoreBlock,
  StoreRefund,
  StoreRequest,
  StoreResult,
} from '@sluice/core'
import { invalidOption } from '@sluice/core/adapter'
import type { ClientRateLimitInfo, LegacyStore, Store } from './types'

type AnyStore = Partial<Store & LegacyStore> & Record<string, unknown>

const isFunction = (value: unknown): boolean => typeof value === 'function'

/** True for a store written for express-rate-limit (as opposed to a Sluice Store). */
export function isPeerStore(store: unknown): store is Store | LegacyStore {
  if (typeof store !== 'object' || store === null) return false
  const candidate = store as AnyStore
  return !isFunction(candidate.consume)
}

/** Checks the store's methods once, at creation: a ConfigError naming `store` otherwise. */
export function checkPeerStore(store: Store | LegacyStore): void {
  const candidate = store as AnyStore
  const counts = isFunction(candidate.increment) || isFunction(candidate.incr)
  const optional = (name: string) => candidate[name] === undefined || isFunction(candidate[name])
  if (
    !counts ||
    !isFunction(candidate.decrement) ||
    !isFunction(candidate.resetKey) ||
    !optional('init') ||
    !optional('resetAll')
  ) {
    invalidOption(
      'store',
      store,
      'a store with increment (or incr), decrement and resetKey methods (and init, resetAll only as methods), or a Sluice Store',
    )
  }
}

/** The store's `increment`, or its pre-v6 `incr` behind a promise. */
function incrementOf(store: Store | LegacyStore): (key: string) => Promise<ClientRateLimitInfo> {
  const modern = store as Partial<Store>
  if (typeof modern.increment === 'function') {
    const increment = modern.increment.bind(store)
    return async (key) => increment(key)
  }
  const legacy = store as LegacyStore
  return (key) =>
    new Promise((resolve, reject) => {
      legacy.incr(key, (error, totalHits, resetTime) => {
        if (error) reject(error)
        else resolve({ totalHits, resetTime })
      })
    })
}

/**
 * One request's outcome from the store's count: express-rate-limit admits while the hits,
 * this one included, are within the limit. A store that gives no reset time is taken to reset
 * a whole window from now.
 */
function outcomeOf(policy: Policy, info: ClientRateLimitInfo, now: number): PolicyOutcome {
  const allowed = info.totalHits <= policy.limit
  const resetMs =
    info.resetTime instanceof Date ? Math.max(0, info.resetTime.getTime() - now) : policy.windowMs
  return {
    allowed,
    remaining: Math.max(0, policy.limit - info.totalHits),
    resetMs,
    retryAfterMs: allowed ? 0 : resetMs,
    delayMs: 0,
  }
}

const OTHER_ALGORITHMS = ['sliding-window', 'sliding-log', 'token-bucket', 'leaky-bucket', 'gcra']

/**
 * An express-rate-limit store as a Sluice Store. Its windows are its own (express-rate-limit's
 * stores count fixed windows from each key's first hit), and every hit counts, rejected ones
 * too, as they do there. `onFailure` sees each failed count before the limiter does.
 */
export class PeerStore implements SluiceStore {
  readonly unsupportedAlgorithms = OTHER_ALGORITHMS
  private readonly increment: (key: string) => Promise<ClientRateLimitInfo>

  constructor(
    readonly peer: Store | LegacyStore,
    private readonly onFailure: ((error: unknown) => void) | undefined,
  ) {
    this.increment = incrementOf(peer)
  }

  async consume(request: StoreRequest): Promise<StoreResult> {
    let info: ClientRateLimitInfo
    try {
      info = await this.increment(request.key)
    } catch (error) {
      this.onFailure?.(error)
      throw error
    }
    return { outcomes: request.policies.map((policy) => outcomeOf(policy, info, request.now)) }
  }

  async peek(request: StoreRequest): Promise<StoreResult> {
    const info = (await this.get(request.key)) ?? { totalHits: 0, resetTime: undefined }
    return { outcomes: request.policies.map((policy) => outcomeOf(policy, info, request.now)) }
  }

  /**
   * Takes back one hit, unless the window it was counted in is over (a store's window may end
   * sooner than a whole window after the hit; never later).
   */
  async refund(request: StoreRefund): Promise<void> {
    const windowMs = Math.min(...request.policies.map((policy) => policy.windowMs))
    if (request.at !== undefined && request.now >= request.at + windowMs) return
    await this.takeBack(request.key)
  }

  /** Takes back one hit of the key, as express-rate-limit's skip options do. */
  async takeBack(key: string): Promise<void> {
    await this.peer.decrement(key)
  }

  async penalize(request: StoreRequest): Promise<void> {
    for (let i = 0; i < request.cost; i++) await this.increment(request.key)
  }

  block(_request: StoreBlock): Promise<void> {
    return Promise.reject(
      new SluiceError('ERR_SLUICE_UNSUPPORTED', 'an express-rate-limit store cannot block a key'),
    )
  }

  async reset(key: string): Promise<void> {
    await this.peer.resetKey(key)
  }

  /** The store's own `get`; a store without one cannot answer (express-rate-limit throws too). */
  get(key: string): Promise<ClientRateLimitInfo | undefined> | ClientRateLimitInfo | undefined {
    const get = (this.peer as Partial<Store>).get
    if (typeof get !== 'function') {
      throw new SluiceError('ERR_SLUICE_UNSUPPORTED', 'the store does not implement get(key)')
    }
    return get.call(this.peer, key)
  }
}
