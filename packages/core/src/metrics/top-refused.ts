/**
 * Owns the top refused keys of a limiter (`topRefused` option, `limiter.topRefused(n)`): a
 * Space-Saving summary per interval, the current one and the last finished one, so memory is
 * fixed by `k` whatever the number of distinct keys; and how keys are shown outside the process
 * (metrics, log lines): hashed by default, so no raw key reaches them unless asked.
 */
import type { Clock } from '../clock'
import { invalidOption } from '../errors'
import { base64url, sha256 } from '../sha256'
import type { StoreLogger } from '../store-call/health'
import { SpaceSaving, type HeavyHitter } from './space-saving'

/** How a key appears in metrics and log lines. */
export type KeyReveal = 'hash' | 'raw' | { truncate: number }

export interface TopRefusedOptions {
  /**
   * Keys the summary tracks. Memory is fixed by it (two summaries of k keys); a count may
   * overstate a key's refusals by at most (refusals in the interval) / k.
   * @default 100
   */
  k?: number
  /** The recent interval: counts cover the current interval and the one before. @default 60_000 */
  intervalMs?: number
  /**
   * How keys appear in metrics and log lines: `'hash'` (the first 12 base64url characters of SHA-256),
   * `{ truncate: n }` (the first n characters), or `'raw'`. `limiter.topRefused` returns keys as they are.
   * @default 'hash'
   */
  reveal?: KeyReveal
  /** Keys exported per watched limiter, as `sluice_top_refused{name, key}`. @default 5 */
  exported?: number
  /** Logs the top keys of each finished interval that had refusals (to the limiter's `logger`). @default false */
  log?: boolean
}

/** One of the keys refused most: `count - error <= refusals <= count`. */
export type RefusedKey = HeavyHitter

interface TopRefusedSettings {
  readonly k: number
  readonly intervalMs: number
  readonly reveal: (key: string) => string
  readonly exported: number
  readonly log: boolean
}

const MAX_K = 100_000

function checkWhole(name: string, value: unknown, min: number, max: number): number {
  if (!Number.isSafeInteger(value) || (value as number) < min || (value as number) > max) {
    invalidOption(name, value, `a whole number from ${min} to ${max}`)
  }
  return value as number
}

function revealer(reveal: unknown): (key: string) => string {
  if (reveal === 'raw') return (key) => key
  if (reveal === 'hash') return (key) => base64url(sha256(key)).slice(0, 12)
  const truncate = (reveal as { truncate?: unknown } | null)?.truncate
  if (typeof reveal !== 'object' || truncate === undefined) {
    invalidOption('topRefused.reveal', reveal, "'hash', 'raw' or { truncate: n }")
  }
  const n = checkWhole('topRefused.reveal.truncate', truncate, 1, 1024)
  return (key) => (key.length > n ? `${key.slice(0, n)}…` : key)
}

/** Checks the `topRefused` option once; undefined when off. */
export function resolveTopRefused(option: unknown): TopRefusedSettings | undefined {
  if (option === undefined || option === false) return undefined
  if (option !== true && (typeof option !== 'object' || option === null)) {
    invalidOption('topRefused', option, 'true, false or { k, intervalMs, reveal, exported, log }')
  }
  const given: TopRefusedOptions = option === true ? {} : (option as TopRefusedOptions)
  return {
    k: checkWhole('topRefused.k', given.k ?? 100, 1, MAX_K),
    intervalMs: checkWhole('topRefused.intervalMs', given.intervalMs ?? 60_000, 1, 86_400_000),
    reveal: revealer(given.reveal ?? 'hash'),
    exported: checkWhole('topRefused.exported', given.exported ?? 5, 0, 100),
    log: typeof given.log === 'boolean' ? given.log : invalidLog(given.log),
  }
}

function invalidLog(log: unknown): boolean {
  if (log === undefined) return false
  return invalidOption('topRefused.log', log, 'a boolean')
}

/** The refused keys of one limiter, over the current interval and the last finished one. */
export class RefusedKeys {
  private current: SpaceSaving
  private previous: SpaceSaving
  private started: number

  constructor(
    readonly settings: TopRefusedSettings,
    private readonly clock: Clock,
    private readonly logger: StoreLogger,
  ) {
    this.current = new SpaceSaving(settings.k)
    this.previous = new SpaceSaving(settings.k)
    this.started = clock()
  }

  /** Counts one refusal of `key` (cost units are not weighed: a refusal is a refusal). */
  add(key: string): void {
    this.rotate()
    this.current.offer(key)
  }

  /** The `n` keys refused most in the current and the last interval, most first. */
  top(n: number): RefusedKey[] {
    this.rotate()
    const { current, previous } = this
    const merged = new Map<string, RefusedKey>()
    for (const summary of [current, previous]) {
      for (const { key } of summary.items()) {
        if (merged.has(key)) continue
        // A key missing from one summary may have had up to that summary's floor there.
        const a = current.get(key) ?? { count: current.floor, error: current.floor }
        const b = previous.get(key) ?? { count: previous.floor, error: previous.floor }
        merged.set(key, { key, count: a.count + b.count, error: a.error + b.error })
      }
    }
    return [...merged.values()].sort((x, y) => y.count - x.count || x.error - y.error).slice(0, n)
  }

  /** `top(n)` with keys as `reveal` shows them, for metrics and logs. */
  shown(n: number): { key: string; count: number }[] {
    return this.top(n).map(({ key, count }) => ({ key: this.settings.reveal(key), count }))
  }

  /** One log fragment: `a1b2c3 (120), d4e5f6 (80)`, or undefined with no refusals. */
  describe(n: number): string | undefined {
    const shown = this.shown(n)
    if (shown.length === 0) return undefined
    return shown.map(({ key, count }) => `${key} (${count})`).join(', ')
  }

  private rotate(): void {
    const now = this.clock()
    const elapsed = now - this.started
    if (elapsed < this.settings.intervalMs && elapsed >= 0) return
    const finished = this.current
    if (this.settings.log && finished.total > 0) this.logFinished(finished)
    // Two intervals or more without a rotation (or a clock stepped back): nothing recent is left.
    this.previous =
      elapsed < 2 * this.settings.intervalMs && elapsed >= 0
        ? finished
        : new SpaceSaving(this.settings.k)
    this.current = new SpaceSaving(this.settings.k)
    this.started = now
  }

  private logFinished(finished: SpaceSaving): void {
    const top = finished
      .items()
      .slice(0, 5)
      .map(({ key, count }) => `${this.settings.reveal(key)} (${count})`)
      .join(', ')
    this.logger.warn(
      `[sluice] ${finished.total} requests refused in the last ${this.settings.intervalMs} ms; most refused keys: ${top}`,
    )
  }
}

/** Each limiter's refused keys, for the recorders' `watch` (limiters are public objects). */
const byLimiter = new WeakMap<object, RefusedKeys>()

export function registerRefusedKeys(limiter: object, keys: RefusedKeys): void {
  byLimiter.set(limiter, keys)
}

export function refusedKeysOf(source: object): RefusedKeys | undefined {
  return byLimiter.get(source)
}
