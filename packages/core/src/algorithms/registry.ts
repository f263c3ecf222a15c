/**
 * Owns the one table of algorithms: each one's name, code, family, transitions (narrow, and
 * wide where the maths needs BigInt), how a store keeps its state and how a script's reply
 * reads, and its Lua. Every package reads it (core's options and policies, RedisStore's scripts and route,
 * MemcachedStore's layout); no other source file lists the algorithms. A new algorithm is one
 * row here, one TypeScript file beside this one (`<name>.ts`) and one Lua fragment file
 * (`<name>.lua.ts`).
 */
import { firstRequestWindow } from './first-request-window'
import { fixedWindow } from './fixed-window'
import { gcra, gcraAtBacklog, gcraWide, gcraWideAtBacklog } from './gcra'
import { leakyBucket, leakyBucketWide } from './leaky-bucket'
import { slidingLog } from './sliding-log'
import { slidingWindow } from './sliding-window'
import { bucketAtBacklog, bucketWideAtBacklog, tokenBucket, tokenBucketWide } from './token-bucket'

import type { Algorithm, PolicyNumbers, StateVector } from './types'
import type { LuaFragments, WideLuaFragments } from './lua'
export { listNames } from '../option-checks'
import { firstRequestWindowLua, fixedWindowLua } from './fixed-window.lua'
import { gcraLua } from './gcra.lua'
import { gcraWideLua } from './gcra.wide.lua'
import { leakyBucketLua, leakyBucketWideLua } from './leaky-bucket.lua'
import { slidingLogLua } from './sliding-log.lua'
import { slidingWindowLua } from './sliding-window.lua'
import { tokenBucketLua } from './token-bucket.lua'
import { tokenBucketWideLua } from './token-bucket.wide.lua'

/**
 * - `counter`: counts requests in windows (fixed-window, sliding-window); exact at any size.
 * - `meter`: a backlog draining at `limit` per window, with room for `burst` (token-bucket,
 *   leaky-bucket, gcra); past 2^50 its wide transitions take over.
 * - `log`: one timestamp per unit (sliding-log); bounded by the narrow size.
 */
export type AlgorithmFamily = 'counter' | 'meter' | 'log'

/**
 * How a store keeps one policy's state: `pair`, two integers (one Redis string, or one field of
 * a packed hash); `ring`, a newest bucket and a counter per bucket (a hash); `log`, a sorted set.
 */
export type StateShape = 'pair' | 'ring' | 'log'

/**
 * What RedisStore's scripts reply for one policy, from which the store rebuilds a state and runs
 * the algorithm's own decide: `backlog` (an integer: the meter's backlog drained to now),
 * `window` (count x (window + 1) + ms to the next window), `ring` (now, the newest bucket, then
 * slot and count of each non-zero counter), `log` (live, newest - now, mustExpire - now, now).
 */
export type ReplyShape = 'backlog' | 'window' | 'ring' | 'log'

/** The options of a limit that only some algorithms take (LimitOptions). */
export type AlgorithmOption = 'burst' | 'precision' | 'anchor'

/**
 * Where a unit leased by a local tier must be spent by, for algorithms whose count resets at a
 * boundary: the end of the window (`window`), or of the sub-window bucket it was counted in
 * (`bucket`, read from an admitted request's reset, precision - 1 buckets earlier).
 */
export type LeaseBoundary = 'window' | 'bucket'

/** One row of the registry. */
export interface AlgorithmRow {
  readonly name: string
  /** Short code: in policy ids and in what stores send to their scripts. */
  readonly code: string
  /**
   * One letter for the code in RedisStore's short state keys (`g100/1s`): part of every key
   * written, so a letter never changes once released.
   */
  readonly letter: string
  readonly family: AlgorithmFamily
  readonly state: StateShape
  readonly reply: ReplyShape
  /** The algorithm-specific limit options it takes; any other one given is refused. */
  readonly takes: readonly AlgorithmOption[]
  /** Gives each admitted request its own delay (shaping): a local tier's lease cannot answer it. @default false */
  readonly shapes?: boolean
  /** See LeaseBoundary; absent when a lease may be spent at any time. */
  readonly leaseBoundary?: LeaseBoundary
  /**
   * Its state is one count per key and window, reset when the window ends: a store that can only
   * increment a key's count (a peer library's `increment` store) runs it. @default false
   */
  readonly oneCount?: boolean
  /** Its transitions. */
  readonly narrow: Algorithm
  /** Its transitions for wide policies (isWide), where they differ from `narrow`. */
  readonly wide?: Algorithm
  /** A meter's state whose backlog at time 0 is `backlog` (how a `backlog` reply reads). */
  readonly atBacklog?: (s: StateVector, backlog: number, policy: PolicyNumbers) => void
  /** Its Lua, for stores that run scripts (RedisStore): `<name>.lua.ts`. */
  readonly lua: LuaFragments
  /**
   * Its Lua for wide policies (`<name>.wide.lua.ts`, on limbs: exact past 2^53), and the wide
   * state whose backlog at time 0 is a script's reply (as `atBacklog`, on a BigInt).
   */
  readonly wideLua?: {
    readonly lua: WideLuaFragments
    readonly atBacklog: (s: StateVector, backlog: bigint, policy: PolicyNumbers) => void
  }
  /** The variant anchored at each key's first request (LimitOptions.anchor), its own code. */
  readonly firstRequest?: {
    readonly code: string
    readonly letter: string
    readonly narrow: Algorithm
    readonly lua: LuaFragments
  }
}

export const REGISTRY = [
  {
    name: 'fixed-window',
    code: 'fw',
    letter: 'f',
    family: 'counter',
    state: 'pair',
    reply: 'window',
    takes: ['anchor'],
    leaseBoundary: 'window',
    oneCount: true,
    narrow: fixedWindow,
    lua: fixedWindowLua,
    firstRequest: {
      code: 'fk',
      letter: 'k',
      narrow: firstRequestWindow,
      lua: firstRequestWindowLua,
    },
  },
  {
    name: 'sliding-window',
    code: 'sw',
    letter: 'w',
    family: 'counter',
    state: 'ring',
    reply: 'ring',
    takes: ['precision'],
    leaseBoundary: 'bucket',
    narrow: slidingWindow,
    lua: slidingWindowLua,
  },
  {
    name: 'sliding-log',
    code: 'sl',
    letter: 's',
    family: 'log',
    state: 'log',
    reply: 'log',
    takes: [],
    narrow: slidingLog,
    lua: slidingLogLua,
  },
  {
    name: 'token-bucket',
    code: 'tb',
    letter: 't',
    family: 'meter',
    state: 'pair',
    reply: 'backlog',
    takes: ['burst'],
    narrow: tokenBucket,
    wide: tokenBucketWide,
    atBacklog: bucketAtBacklog,
    lua: tokenBucketLua,
    wideLua: { lua: tokenBucketWideLua, atBacklog: bucketWideAtBacklog },
  },
  {
    name: 'leaky-bucket',
    code: 'lb',
    letter: 'l',
    family: 'meter',
    state: 'pair',
    reply: 'backlog',
    takes: ['burst'],
    shapes: true,
    narrow: leakyBucket,
    wide: leakyBucketWide,
    atBacklog: bucketAtBacklog,
    lua: leakyBucketLua,
    wideLua: { lua: leakyBucketWideLua, atBacklog: bucketWideAtBacklog },
  },
  {
    name: 'gcra',
    code: 'gc',
    letter: 'g',
    family: 'meter',
    state: 'pair',
    reply: 'backlog',
    takes: ['burst'],
    narrow: gcra,
    wide: gcraWide,
    atBacklog: gcraAtBacklog,
    lua: gcraLua,
    wideLua: { lua: gcraWideLua, atBacklog: gcraWideAtBacklog },
  },
] as const satisfies readonly AlgorithmRow[]

/** The algorithms, by name. See docs/algorithms.md for how each decides and when to pick it. */
export type AlgorithmName = (typeof REGISTRY)[number]['name']

/** Every algorithm's name, in the registry's order. */
export const ALGORITHM_NAMES: readonly AlgorithmName[] = REGISTRY.map((row) => row.name)

/** The rows by name (a plain object: algorithmOf reads it on every decision). */
export const ROWS: Readonly<Record<AlgorithmName, AlgorithmRow>> = Object.fromEntries(
  REGISTRY.map((row): [AlgorithmName, AlgorithmRow] => [row.name, row]),
) as Record<AlgorithmName, AlgorithmRow>

/** The registry's row of `name`. */
export function rowOf(name: AlgorithmName): AlgorithmRow {
  return ROWS[name]
}

/** The algorithm a limit without `algorithm` uses. */
export const DEFAULT_ALGORITHM: AlgorithmName = 'sliding-window'

/** The names of the algorithms that take `option`, for a message. */
export function namesTaking(option: AlgorithmOption): AlgorithmName[] {
  return ALGORITHM_NAMES.filter((name) => rowOf(name).takes.includes(option))
}

/** The names of the algorithms whose row passes `test`. */
export function namesWhere(test: (row: AlgorithmRow) => boolean): AlgorithmName[] {
  return ALGORITHM_NAMES.filter((name) => test(rowOf(name)))
}

/** The names of the algorithms in `family`. */
export function namesIn(family: AlgorithmFamily): AlgorithmName[] {
  return ALGORITHM_NAMES.filter((name) => rowOf(name).family === family)
}
