// A shared store's health, one per store: circuit breaker, bound on calls in flight, outage log.
import {
  ConfigError,
  invalidOption,
  StoreError,
  withoutStack,
  type StoreErrorCode,
} from '../errors'
import type { WaitUntil } from './wait-until'
import { storeName } from './store-name'

/** Receives the outage lines (one when a store starts failing, one when it recovers). */
export interface StoreLogger {
  warn(message: string): void
}

export interface BreakerOptions {
  /** Store failures in a row (errors or timeouts) that open the breaker. @default 5 */
  failures?: number
  /** How long an open breaker answers without the store before one probe call goes. @default 1000 */
  coolOffMs?: number
}

/** Breaker and in-flight settings, resolved; one set per store. */
export interface StoreHealthSettings {
  readonly failures: number
  readonly coolOffMs: number
  readonly maxInFlight: number
}

export type BreakerState = 'closed' | 'open' | 'half-open'

/** What `storeHealth(store)` reports. */
export interface StoreHealthSnapshot {
  /** `open`: calls are answered by onStoreError without being sent; `half-open`: one probe is out. */
  readonly state: BreakerState
  /** Calls sent and not yet answered by the store (timed-out calls count until their late reply). */
  readonly inFlight: number
  /** Failures since the last call the store answered in time. */
  readonly failuresInRow: number
  /** True from the first failure until the store answers in time again. */
  readonly failing: boolean
  /** Requests answered without the store during the current outage. */
  readonly answeredWithout: number
}

/** What the outage lines name: the keys refused most by a limiter on the store (`topRefused`). */
export interface RefusedNote {
  describe(n: number): string | undefined
}

export const DEFAULT_BREAKER = { failures: 5, coolOffMs: 1000 } as const
export const DEFAULT_MAX_IN_FLIGHT = 5000

/** admit()'s answers when the call may go: as usual, or as the one probe of a half-open breaker. */
export const SEND = 0
export const PROBE = 1

/** Checks `breaker` and `maxInFlight` once, at creation. */
export function resolveHealthSettings(
  breaker: unknown,
  maxInFlight: unknown = DEFAULT_MAX_IN_FLIGHT,
): StoreHealthSettings {
  if (!Number.isSafeInteger(maxInFlight) || (maxInFlight as number) < 1) {
    invalidOption('maxInFlight', maxInFlight, 'a positive whole number of store calls')
  }
  const inFlight = maxInFlight as number
  if (breaker === false) return { failures: Infinity, coolOffMs: 0, maxInFlight: inFlight }
  if (breaker === undefined) return { ...DEFAULT_BREAKER, maxInFlight: inFlight }
  if (typeof breaker !== 'object' || breaker === null || Array.isArray(breaker)) {
    invalidOption('breaker', breaker, 'an object { failures, coolOffMs } or false')
  }
  const { failures = DEFAULT_BREAKER.failures, coolOffMs = DEFAULT_BREAKER.coolOffMs } =
    breaker as BreakerOptions
  for (const key of Object.keys(breaker)) {
    if (key !== 'failures' && key !== 'coolOffMs') {
      invalidOption(`breaker.${key}`, (breaker as Record<string, unknown>)[key], 'unset (unknown)')
    }
  }
  if (!Number.isSafeInteger(failures) || failures < 1) {
    invalidOption('breaker.failures', failures, 'a positive whole number of failures')
  }
  if (typeof coolOffMs !== 'number' || !Number.isFinite(coolOffMs) || coolOffMs <= 0) {
    invalidOption('breaker.coolOffMs', coolOffMs, 'a positive number of ms')
  }
  return { failures, coolOffMs, maxInFlight: inFlight }
}

function sameSettings(a: StoreHealthSettings, b: StoreHealthSettings): boolean {
  return a.failures === b.failures && a.coolOffMs === b.coolOffMs && a.maxInFlight === b.maxInFlight
}

function unavailable(message: string, code: StoreErrorCode): StoreError {
  // Answered at once for every request while the breaker is open: no stack each.
  return withoutStack(() => new StoreError(message, { code }))
}

/**
 * One store's health as every limiter on it sees it. Closed: calls go. After `failures` in a
 * row: open, calls are answered at once (StoreError ERR_SLUICE_STORE_UNAVAILABLE) without
 * being sent, so a hung store costs no waiting and no memory. After `coolOffMs`: half-open, one
 * call goes as a probe; answered in time, the breaker closes, else it opens again. Independently,
 * at most `maxInFlight` calls may be out at once (ERR_SLUICE_STORE_BUSY beyond): a timed-out
 * call stays out until the store replies, so this bounds what a hang keeps alive.
 */
export class StoreHealth {
  state: BreakerState = 'closed'
  inFlight = 0
  private failuresInRow = 0
  private openedAt = 0
  private probeOut = false
  private failingSince = -1
  private answeredWithout = 0
  private handOverFailed = false
  /** The limiters' top refused keys, held weakly: a dropped limiter drops out of the lines. */
  private readonly refused = new Set<WeakRef<RefusedNote>>()

  constructor(
    private readonly name: string,
    readonly settings: StoreHealthSettings,
    private readonly logger: StoreLogger,
  ) {}

  /** SEND or PROBE when the call may go now, else the error to answer it with. */
  admit(): number | StoreError {
    if (this.inFlight >= this.settings.maxInFlight) {
      return unavailable(
        `${this.name} has ${this.inFlight} calls in flight (maxInFlight)`,
        'ERR_SLUICE_STORE_BUSY',
      )
    }
    if (this.state === 'closed') return SEND
    if (this.state === 'open') {
      if (performance.now() - this.openedAt < this.settings.coolOffMs) return this.openError()
      this.state = 'half-open'
    }
    if (this.probeOut) return this.openError()
    this.probeOut = true
    return PROBE
  }

  /** The store answered in time: a closed breaker stays closed, any other closes. */
  succeeded(kind: number): void {
    if (kind === PROBE) this.probeOut = false
    this.failuresInRow = 0
    if (this.failingSince < 0) return
    const seconds = ((performance.now() - this.failingSince) / 1000).toFixed(1)
    this.logger.warn(
      `[sluice] ${this.name} recovered after ${seconds} s; ${this.answeredWithout} requests were answered without it${this.refusedNote()}`,
    )
    this.state = 'closed'
    this.failingSince = -1
    this.answeredWithout = 0
  }

  /** The call failed or timed out; `mode` is the onStoreError in force, for the first log line. */
  failed(kind: number, error: StoreError, mode: string): void {
    this.failuresInRow++
    if (this.failingSince < 0) {
      this.failingSince = performance.now()
      this.logger.warn(
        `[sluice] ${this.name} is failing (${error.message}); answering with onStoreError ${mode} until it recovers${this.refusedNote()}`,
      )
    }
    if (kind === PROBE) {
      this.probeOut = false
      this.open()
    } else if (this.state === 'closed' && this.failuresInRow >= this.settings.failures) {
      this.open()
      this.logger.warn(
        `[sluice] ${this.name}: circuit breaker open after ${this.failuresInRow} failures in a row; probing again every ${this.settings.coolOffMs} ms`,
      )
    }
  }

  /**
   * Gives `waitUntil` the work a timed-out call left running. A waitUntil that throws must not
   * change the decision: caught, and logged once per store (a broken one throws every time).
   */
  handOver(waitUntil: WaitUntil, late: Promise<unknown>): void {
    try {
      waitUntil(late)
    } catch (error) {
      if (this.handOverFailed) return
      this.handOverFailed = true
      this.logger.warn(
        `[sluice] waitUntil threw, so a late reply of ${this.name} may be cut off with its refund (logged once): ${String(error)}`,
      )
    }
  }

  /** A request answered without the store (onStoreError, or a StoreError thrown). */
  answeredWithoutStore(): void {
    if (this.failingSince >= 0) this.answeredWithout++
  }

  /** Names `note`'s top refused keys in the outage lines from now on. */
  noteRefused(note: RefusedNote): void {
    this.refused.add(new WeakRef(note))
  }

  /** `; most refused keys: ...` for the outage lines, or '' when no limiter keeps them. */
  private refusedNote(): string {
    const parts: string[] = []
    for (const ref of this.refused) {
      const note = ref.deref()
      if (note === undefined) this.refused.delete(ref)
      else {
        const described = note.describe(3)
        if (described !== undefined) parts.push(described)
      }
    }
    return parts.length === 0 ? '' : `; most refused keys: ${parts.join('; ')}`
  }

  snapshot(): StoreHealthSnapshot {
    return {
      state: this.state,
      inFlight: this.inFlight,
      failuresInRow: this.failuresInRow,
      failing: this.failingSince >= 0,
      answeredWithout: this.answeredWithout,
    }
  }

  private open(): void {
    this.state = 'open'
    this.openedAt = performance.now()
  }

  private openError(): StoreError {
    return unavailable(
      `${this.name} is unavailable (circuit breaker open)`,
      'ERR_SLUICE_STORE_UNAVAILABLE',
    )
  }
}

const healths = new WeakMap<object, StoreHealth>()

/**
 * The store's health, created by the first limiter on it. Limiters sharing a store share its
 * breaker, so they must agree on its settings: a different `breaker`/`maxInFlight` is an error.
 */
export function healthOf(
  store: object,
  settings: StoreHealthSettings,
  logger: StoreLogger,
): StoreHealth {
  let health = healths.get(store)
  if (health === undefined) {
    health = new StoreHealth(storeName(store), settings, logger)
    healths.set(store, health)
  } else if (!sameSettings(health.settings, settings)) {
    throw new ConfigError(
      `\`breaker\`/\`maxInFlight\` must match the other limiters on this ${storeName(store)} (they share one breaker): ${JSON.stringify(health.settings)} there, ${JSON.stringify(settings)} here`,
    )
  }
  return health
}

/** The breaker state and calls in flight of a shared store; undefined before a limiter used it. */
export function storeHealth(store: object): StoreHealthSnapshot | undefined {
  return healths.get(store)?.snapshot()
}
