/**
 * Owns the `concurrency` option: requests in flight per key, as a policy beside the rate
 * policies (checked once, at creation).
 */
import { ConfigError, invalidOption } from '../errors'
import type { Policy } from '../policy'

/** Requests of one key in flight at once; see docs/concurrency.md. */
export interface ConcurrencyLimit {
  /** Requests of one key that may be in flight at once: a whole number from 1 to 2^31 - 1. */
  concurrency: number
  /**
   * How long a slot stays taken without being renewed: a slot of a process that died comes back
   * after at most this. Renewed every third of it while the request runs, so a long request
   * keeps its slot. From 3 x `timeoutMs` (a shared store; 10 ms in process) to one hour.
   * @default 30_000
   */
  leaseMs?: number
  /** How long a request may wait for a slot (first come, first served); 0 refuses at once. @default 0 */
  maxWaitMs?: number
  /** Requests that may wait at once in this limiter; beyond, a request is refused at once. @default 1000 */
  maxWaiting?: number
  /** Shown in `RateLimit-Policy` headers. @default `${concurrency}-concurrent` */
  name?: string
}

/** A resolved concurrency limit: a Policy (for headers and decisions) with its lease settings. */
export interface ConcurrencyPolicy extends Policy {
  readonly kind: 'concurrency'
  readonly leaseMs: number
  readonly maxWaitMs: number
  readonly maxWaiting: number
}

export const MAX_CONCURRENCY = 2 ** 31 - 1
export const DEFAULT_LEASE_MS = 30_000
const MAX_LEASE_MS = 3_600_000
/** The shortest lease on an in-process store (no round trip to outlast). */
const MIN_LOCAL_LEASE_MS = 10

function checkMs(name: string, value: unknown, min: number, max: number, why: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
    invalidOption(name, value, `a number of ms from ${min} to ${max}${why}`)
  }
  return value
}

/**
 * Checks `concurrency` once. `timeoutMs` is the limiter's store timeout, undefined for an
 * in-process store: a lease must outlast three store calls, or it could lapse while renewed.
 */
export function resolveConcurrency(
  option: unknown,
  timeoutMs: number | undefined,
): ConcurrencyPolicy | undefined {
  if (option === undefined) return undefined
  const given: ConcurrencyLimit =
    typeof option === 'number' ? { concurrency: option } : (option as ConcurrencyLimit)
  if (typeof given !== 'object' || given === null) {
    invalidOption(
      'concurrency',
      option,
      'a whole number of requests or { concurrency, leaseMs, ... }',
    )
  }
  for (const name of Object.keys(given)) {
    if (!['concurrency', 'leaseMs', 'maxWaitMs', 'maxWaiting', 'name'].includes(name)) {
      invalidOption(
        `concurrency.${name}`,
        (given as unknown as Record<string, unknown>)[name],
        'unset (unknown)',
      )
    }
  }
  const limit = given.concurrency
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_CONCURRENCY) {
    invalidOption('concurrency', limit, `a whole number of requests from 1 to ${MAX_CONCURRENCY}`)
  }
  const min = timeoutMs === undefined ? MIN_LOCAL_LEASE_MS : 3 * timeoutMs
  const why =
    timeoutMs === undefined
      ? ''
      : ` (at least 3 x timeoutMs ${timeoutMs}: a lease must outlast its renewal)`
  const leaseMs = checkMs(
    'concurrency.leaseMs',
    given.leaseMs ?? DEFAULT_LEASE_MS,
    min,
    MAX_LEASE_MS,
    why,
  )
  const maxWaitMs = checkMs('concurrency.maxWaitMs', given.maxWaitMs ?? 0, 0, MAX_LEASE_MS, '')
  const maxWaiting = given.maxWaiting ?? 1000
  if (!Number.isSafeInteger(maxWaiting) || maxWaiting < 0) {
    invalidOption(
      'concurrency.maxWaiting',
      maxWaiting,
      'a whole number of requests (0 lets none wait)',
    )
  }
  const name = given.name ?? `${limit}-concurrent`
  if (typeof name !== 'string' || name === '')
    invalidOption('concurrency.name', name, 'a non-empty string')
  return {
    kind: 'concurrency',
    id: `c${limit}`,
    name,
    // The rate fields a Policy carries, so headers and events read a concurrency limit as
    // any other: the limit is the slots, the "window" the lease.
    algorithm: 'fixed-window',
    limit,
    burst: limit,
    windowMs: leaseMs,
    precision: 1,
    anchor: 'clock',
    leaseMs,
    maxWaitMs,
    maxWaiting,
  }
}

/** A store that keeps no slots: refused at creation, naming the store. */
export function noSlots(store: object): never {
  throw new ConfigError(
    `\`concurrency\` needs a store that keeps slots (MemoryStore, RedisStore); ${store.constructor.name} does not`,
  )
}
