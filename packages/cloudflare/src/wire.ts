/**
 * Owns what a DurableObjectStore sends its objects and what they answer: one JSON body per
 * call (ops below), outcomes back. JSON has no Infinity (a request that can never fit is
 * refused with retryAfterMs Infinity), so it travels as the string "Infinity".
 */
import type { Policy, PolicyOutcome } from '@sluice/core/web'

/** What a call asks the object to do with the key (see the Store contract of the same names). */
export type Op = 'consume' | 'peek' | 'refund' | 'penalize' | 'block' | 'reset'

export interface Call {
  readonly op: Op
  readonly key: string
  readonly policies: readonly Policy[]
  readonly keys?: readonly string[]
  readonly cost: number
  /** The limiter's clock; the object's own clock decides instead with `time: 'object'`. */
  readonly now: number
  /** Whether the object decides on its own clock (DurableObjectStoreOptions.time). */
  readonly objectTime: boolean
  readonly maxDelayMs?: number
  /** refund: when the refunded request was admitted (absent: a reward). */
  readonly at?: number
  /**
   * refund: `now` and `at` are on the object's clock (a StoreResult's `at`): an object on its
   * own clock decides at `now` as given, where the charge was made.
   */
  readonly storeClock?: boolean
  /** block: until when (ms, on the clock that decides). */
  readonly until?: number
}

/** The object's answer: outcomes per policy (empty for refund, penalize, block, reset). */
export interface Answer {
  readonly outcomes?: readonly PolicyOutcome[]
  /** consume on the object's own clock: that clock when it decided (StoreResult.at). */
  readonly at?: number
  /** Why the call failed, when it did. */
  readonly error?: string
}

const INFINITY = 'Infinity'

/** JSON text of a call or an answer, Infinity kept. */
export function encode(value: Call | Answer): string {
  return JSON.stringify(value, (_, v: unknown) => (v === Infinity ? INFINITY : v))
}

/** A call or an answer from its JSON text, Infinity restored. */
export function decode<T extends Call | Answer>(text: string): T {
  return JSON.parse(text, (_, v: unknown) => (v === INFINITY ? Infinity : v)) as T
}
