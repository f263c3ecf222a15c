/**
 * Owns the Lua scripts RedisStore loads: assembled per algorithm, named, and their SHA1s.
 */
import type { AlgorithmName, WindowAnchor } from '@sluice/core'
import { ROWS } from '@sluice/core/web'
import { BLOCK } from './block'
import { DRIVER, DRIVER_BATCH } from './driver'
import { FIXED_WINDOW } from './fixed-window'
import {
  bucketFlat,
  fixedWindowFlat,
  gcraFlat,
  slidingLogFlat,
  slidingWindowFlat,
  slidingWindowPackedFlat,
  type BakedPolicy,
} from './flat'
import { GCRA } from './gcra'
import { LEAKY_BUCKET } from './leaky-bucket'
import { METER } from './meter'
import { KEY_STATE, PRELUDE } from './prelude'
import { PACKED_STATE } from './packed'
import { SLIDING_LOG } from './sliding-log'
import { SLIDING_WINDOW } from './sliding-window'
import { TOKEN_BUCKET } from './token-bucket'
import { PACKED_READ, PACKED_WRITE, WIDE_READ, WIDE_WRITE } from './cas'
import { sha1Hex } from '../web-crypto'

/** One Lua script as RedisStore runs it (EVALSHA, and EVAL to load it). */
export interface LuaScript {
  readonly lua: string
  /** SHA1 of `lua`: what SCRIPT LOAD returns and EVALSHA runs. */
  readonly sha: string
}

const BODIES: Readonly<Record<AlgorithmName, string>> = {
  'fixed-window': FIXED_WINDOW,
  'sliding-window': SLIDING_WINDOW,
  'sliding-log': SLIDING_LOG,
  'token-bucket': TOKEN_BUCKET,
  'leaky-bucket': LEAKY_BUCKET,
  gcra: GCRA,
}

export type { BakedPolicy } from './flat'

/**
 * A flat script's Lua (see flat.ts): shared (policy in ARGV), or with `baked` as constants;
 * with `batch` (baked only), the form that decides one consume per key of KEYS in one call.
 */
export function flatLua(
  algorithm: AlgorithmName,
  baked?: BakedPolicy,
  batch = false,
  anchor: WindowAnchor = 'clock',
): string {
  switch (algorithm) {
    case 'gcra':
    case 'fixed-window':
    case 'token-bucket':
    case 'leaky-bucket':
      return pairFlat(algorithm, baked, batch, anchor)
    case 'sliding-window':
      return slidingWindowFlat(baked, batch)
    case 'sliding-log':
      return slidingLogFlat(baked, batch)
  }
}

/** The flat script of an algorithm whose state is a pair, on either layout (`packed`). */
function pairFlat(
  algorithm: PairAlgorithm,
  baked: BakedPolicy | undefined,
  batch: boolean,
  anchor: WindowAnchor,
  packed = false,
): string {
  switch (algorithm) {
    case 'gcra':
      return gcraFlat(baked, batch, packed)
    case 'fixed-window':
      return fixedWindowFlat(baked, batch, anchor, packed)
    case 'token-bucket':
      return bucketFlat('tb', baked, batch, packed)
    case 'leaky-bucket':
      return bucketFlat('lb', baked, batch, packed)
  }
}

/**
 * A flat script's Lua on the packed layout (lua/packed.ts): shared, or with `baked` and
 * `batch` the batch form (the packed layout has no per-policy script of one call).
 */
export function packedFlatLua(
  algorithm: PackedFlatAlgorithm,
  baked?: BakedPolicy,
  batch = false,
  anchor: WindowAnchor = 'clock',
): string {
  if (algorithm === 'sliding-window') return slidingWindowPackedFlat(baked, batch)
  return pairFlat(algorithm, baked, batch, anchor, true)
}

function packedFlat(algorithm: PackedFlatAlgorithm, anchor: WindowAnchor = 'clock'): LuaScript {
  return script(packedFlatLua(algorithm, undefined, false, anchor))
}

export function script(lua: string): LuaScript {
  return { lua, sha: sha1Hex(lua) }
}

/**
 * The generic script of `algorithms`, its states where `state` keeps them (prelude.ts); with
 * `batch`, its batch form (driver.ts).
 */
function build(algorithms: readonly AlgorithmName[], state = KEY_STATE, batch = false): LuaScript {
  const parts = [PRELUDE, state]
  if (algorithms.some((a) => ROWS[a].family === 'meter')) parts.push(METER)
  for (const algorithm of algorithms) parts.push(BODIES[algorithm])
  parts.push(batch ? DRIVER_BATCH : DRIVER)
  return script(parts.join(''))
}

/** Algorithms with a flat script for a single policy (see flat.ts). */
export type FlatAlgorithm = AlgorithmName

export type ScriptName =
  | AlgorithmName
  | 'mixed'
  | `${AlgorithmName}:batch`
  | 'mixed:batch'
  | 'packed:batch'
  | `${FlatAlgorithm}:1`
  | 'fixed-window/first-request:1'
  | 'packed'
  | `${PackedFlatAlgorithm}:packed`
  | 'fixed-window/first-request:packed'
  | 'block'
  | 'wide-read'
  | 'wide-write'
  | 'packed-read'
  | 'packed-write'

const ALL = Object.keys(BODIES) as AlgorithmName[]

/**
 * The algorithms whose state is two integers: the packed layout's generic script decides any
 * set of them (lua/packed.ts).
 */
export const PAIR_ALGORITHMS = ['gcra', 'fixed-window', 'token-bucket', 'leaky-bucket'] as const
export type PairAlgorithm = (typeof PAIR_ALGORITHMS)[number]

/**
 * The algorithms with flat scripts on the packed layout (one limit, and its batches): the pairs
 * and sliding-window, whose ring fits one field. A log's sorted set does not: sliding-log, and
 * every plan no packed script takes, is decided by compare-and-set (cas.ts).
 */
export type PackedFlatAlgorithm = PairAlgorithm | 'sliding-window'

export function isPairAlgorithm(algorithm: AlgorithmName): algorithm is PairAlgorithm {
  return (PAIR_ALGORITHMS as readonly AlgorithmName[]).includes(algorithm)
}

export function hasPackedFlat(algorithm: AlgorithmName): algorithm is PackedFlatAlgorithm {
  return algorithm === 'sliding-window' || isPairAlgorithm(algorithm)
}

/**
 * One script per algorithm (its transitions plus the driver), used when every policy of a
 * limiter has that algorithm, and one with all six for limiters that mix algorithms: either
 * way one EVALSHA decides every policy of a key. `<algorithm>:1`: the flat script of a
 * single policy (flat.ts), same contract and decisions with less work per call (fixed-window
 * has one per anchor). `<algorithm>:batch`, `mixed:batch`: the generic scripts' batch forms
 * (driver.ts). `packed`: the generic script of the algorithms whose state is two
 * integers, on the packed layout (packed.ts), `packed:batch` its batch form, and
 * `<algorithm>:packed` the flat scripts there (those and sliding-window). `block`: sets
 * or lifts a key's block (block.ts). `wide-read`, `wide-write`, `packed-read`,
 * `packed-write`: the reads and compare-and-set writes of the plans core decides in the
 * store's process (cas.ts).
 */
export const SCRIPTS: Readonly<Record<ScriptName, LuaScript>> = {
  'fixed-window': build(['fixed-window']),
  'sliding-window': build(['sliding-window']),
  'sliding-log': build(['sliding-log']),
  'token-bucket': build(['token-bucket']),
  'leaky-bucket': build(['leaky-bucket']),
  gcra: build(['gcra']),
  mixed: build(ALL),
  'fixed-window:batch': build(['fixed-window'], KEY_STATE, true),
  'sliding-window:batch': build(['sliding-window'], KEY_STATE, true),
  'sliding-log:batch': build(['sliding-log'], KEY_STATE, true),
  'token-bucket:batch': build(['token-bucket'], KEY_STATE, true),
  'leaky-bucket:batch': build(['leaky-bucket'], KEY_STATE, true),
  'gcra:batch': build(['gcra'], KEY_STATE, true),
  'mixed:batch': build(ALL, KEY_STATE, true),
  'gcra:1': script(flatLua('gcra')),
  'fixed-window:1': script(flatLua('fixed-window')),
  'fixed-window/first-request:1': script(
    flatLua('fixed-window', undefined, false, 'first-request'),
  ),
  'token-bucket:1': script(flatLua('token-bucket')),
  'leaky-bucket:1': script(flatLua('leaky-bucket')),
  'sliding-window:1': script(flatLua('sliding-window')),
  'sliding-log:1': script(flatLua('sliding-log')),
  packed: build(PAIR_ALGORITHMS, PACKED_STATE),
  'packed:batch': build(PAIR_ALGORITHMS, PACKED_STATE, true),
  'gcra:packed': packedFlat('gcra'),
  'fixed-window:packed': packedFlat('fixed-window'),
  'fixed-window/first-request:packed': packedFlat('fixed-window', 'first-request'),
  'token-bucket:packed': packedFlat('token-bucket'),
  'leaky-bucket:packed': packedFlat('leaky-bucket'),
  'sliding-window:packed': packedFlat('sliding-window'),
  block: script(BLOCK),
  'wide-read': script(WIDE_READ),
  'wide-write': script(WIDE_WRITE),
  'packed-read': script(PACKED_READ),
  'packed-write': script(PACKED_WRITE),
}

/** The batch form of each generic script (see DRIVER_BATCH in driver.ts). */
const BATCHES: ReadonlyMap<LuaScript, LuaScript> = new Map([
  ...(Object.keys(BODIES) as AlgorithmName[]).map(
    (a) => [SCRIPTS[a], SCRIPTS[`${a}:batch`]] as const,
  ),
  [SCRIPTS.mixed, SCRIPTS['mixed:batch']],
  [SCRIPTS.packed, SCRIPTS['packed:batch']],
])

/** The batch form of a generic script; undefined for any other script. */
export function genericBatchOf(generic: LuaScript): LuaScript | undefined {
  return BATCHES.get(generic)
}
