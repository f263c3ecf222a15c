/**
 * Owns the named request traces (bursty, steady, edge) and the seeded random source they use.
 */
import { ConfigError } from '@sluice/core'
import { declareOptions, invalidOption, checkPositiveInteger } from '@sluice/core/adapter'
import { MAX_TRACE_REQUESTS, type TraceRequest } from './simulate'

/** The built-in synthetic traces (the pictures in docs/algorithms.md use `bursty`). */
export type TraceName = 'bursty' | 'steady' | 'edge'

export const TRACE_NAMES: readonly TraceName[] = ['bursty', 'steady', 'edge']

export interface TraceOptions {
  /** The limit the trace is shaped around (requests per window). */
  limit: number
  /** The window the trace is shaped around, in ms. */
  windowMs: number
  /**
   * Length of the trace in windows.
   * @default 8
   */
  windows?: number
  /**
   * Seed of the pseudo-random generator: the same seed gives the same trace.
   * @default 1
   */
  seed?: number
  /** @default 'client' */
  key?: string
}

/** makeTrace's options, declared once; null takes the default, as `value ?? default` did. */
export const TRACE_OPTIONS = declareOptions<TraceOptions>('makeTrace', {
  limit: { doc: 'the limit the trace is shaped around (requests per window); required' },
  windowMs: { doc: 'the window the trace is shaped around, in ms; required' },
  windows: {
    doc: 'length of the trace in windows',
    default: 8,
    check: checkPositiveInteger,
    orNull: true,
  },
  seed: { doc: 'seed of the pseudo-random generator', default: 1, orNull: true },
  key: { doc: "the trace's client key", default: 'client', orNull: true },
})

/**
 * mulberry32: a tiny seeded generator of floats in [0, 1). Math.random cannot be seeded, and a
 * trace must be the same on every run so pictures and accuracy figures are reproducible.
 */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** Collects arrival times, refusing more than a simulation replays. */
type Add = (at: number) => void

/** `count` arrivals spread at random over [from, from + span). */
function scatter(add: Add, random: () => number, from: number, span: number, count: number): void {
  for (let i = 0; i < count; i++) add(from + Math.floor(random() * span))
}

/** Arrivals of a Poisson process at `perMs` requests per ms over [from, to). */
function poisson(add: Add, random: () => number, from: number, to: number, perMs: number): void {
  for (let t = from - Math.log(1 - random()) / perMs; t < to; t -= Math.log(1 - random()) / perMs)
    add(Math.floor(t))
}

/**
 * A synthetic trace for one client, shaped around `limit` per `windowMs`:
 * - `steady`: evenly spaced (10% jitter) at 1.5x the limit's rate: a client that keeps pushing.
 * - `edge`: `limit` requests just before a window boundary and `limit` just after, every other
 *   boundary: the pattern that lets a fixed window pass twice its limit.
 * - `bursty`: a Poisson trickle at half the rate, a burst of 2x the limit, an edge burst, and a
 *   window of sustained overload at 3x the rate.
 * A trace of more than MAX_TRACE_REQUESTS requests is refused (a ConfigError) as it is made.
 */
export function makeTrace(name: TraceName, options: TraceOptions): TraceRequest[] {
  const given = TRACE_OPTIONS.resolve(options)
  // Required: checked here, where an absent one is refused too.
  const limit = checkPositiveInteger(given.limit, 'limit')
  const w = checkPositiveInteger(given.windowMs, 'windowMs')
  const windows = given.windows as number
  const random = seededRandom(given.seed as number)
  const key = given.key as string
  const end = windows * w
  // Every generator below makes at least one arrival per step, so stopping at the bound bounds
  // the time too, whatever limit and windows are.
  const times: number[] = []
  const add: Add = (at) => {
    if (times.length === MAX_TRACE_REQUESTS) {
      throw new ConfigError(
        `the '${name}' trace of \`limit\` ${limit} over \`windows\` ${windows} has more than ${MAX_TRACE_REQUESTS} requests, the most a simulation replays: lower \`limit\` or \`windows\``,
      )
    }
    times.push(at)
  }
  if (name === 'steady') {
    const gap = w / (1.5 * limit)
    for (let t = gap / 2; t < end; t += gap) add(Math.floor(t + (random() - 0.5) * 0.2 * gap))
  } else if (name === 'edge') {
    const span = Math.max(1, Math.floor(w / 20))
    for (let boundary = w; boundary < end; boundary += 2 * w) {
      scatter(add, random, boundary - span, span, limit)
      scatter(add, random, boundary, span, limit)
    }
  } else if (name === 'bursty') {
    const span = Math.max(1, Math.floor(w / 12))
    poisson(add, random, 0, end, limit / w / 2)
    if (windows >= 2) scatter(add, random, Math.floor(1.3 * w), span, 2 * limit)
    if (windows >= 5) {
      scatter(add, random, 4 * w - span, span, limit)
      scatter(add, random, 4 * w, span, limit)
    }
    if (windows >= 8) poisson(add, random, 6 * w, 7 * w, (3 * limit) / w)
  } else {
    return invalidOption('trace', name, `one of ${TRACE_NAMES.map((n) => `'${n}'`).join(', ')}`)
  }
  return times
    .filter((t) => t >= 0 && t < end)
    .sort((a, b) => a - b)
    .map((at) => ({ at, key }))
}
