/**
 * Owns the Lua scripts RedisStore loads: assembled per algorithm, named, and their SHA1s.
 */
import { createHash } from 'node:crypto'
import type { AlgorithmName, WindowAnchor } from '@sluice/core'
import { BLOCK } from './block'
import { DRIVER } from './driver'
import { FIXED_WINDOW } from './fixed-window'
import {
  bucketFlat,
  fixedWindowFlat,
  gcraFlat,
  slidingLogFlat,
  slidingWindowFlat,
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

const NEEDS_METER: ReadonlySet<AlgorithmName> = new Set(['token-bucket', 'leaky-bucket', 'gcra'])

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
      return pairFlat(algorithm, baked, batch, anchor, false)
    case 'sliding-window':
      return slidingWindowFlat(baked, batch)
    case 'sliding-log':
      return slidingLogFlat(baked, batch)
  }
}

/** The flat script of an algorithm whose state is a pair, on either layout (`packed`). */
function pairFlat(
  algorithm: PackedAlgorithm,
  baked: BakedPolicy | undefined,
  batch: boolean,
  anchor: WindowAnchor,
  packed: boolean,
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

/** The packed layout's batch script of a policy (lua/packed.ts, flat/frame.ts). */
export function packedBatchLua(
  algorithm: PackedAlgorithm,
  baked: BakedPolicy,
  anchor: WindowAnchor,
): string {
  return pairFlat(algorithm, baked, true, anchor, true)
}

/** The packed layout's shared flat script of one policy (lua/packed.ts). */
function packedFlat(algorithm: PackedAlgorithm, anchor: WindowAnchor = 'clock'): LuaScript {
  return script(pairFlat(algorithm, undefined, false, anchor, true))
}

export function script(lua: string): LuaScript {
  return { lua, sha: createHash('sha1').update(lua).digest('hex') }
}

/** The generic script of `algorithms`, its states where `state` keeps them (prelude.ts). */
function build(algorithms: readonly AlgorithmName[], state = KEY_STATE): LuaScript {
  const parts = [PRELUDE, state]
  if (algorithms.some((a) => NEEDS_METER.has(a))) parts.push(METER)
  for (const algorithm of algorithms) parts.push(BODIES[algorithm])
  parts.push(DRIVER)
  return script(parts.join(''))
}

/** Algorithms with a flat script for a single policy (see flat.ts). */
export type FlatAlgorithm = AlgorithmName

export type ScriptName =
  | AlgorithmName
  | 'mixed'
  | `${FlatAlgorithm}:1`
  | 'fixed-window/first-request:1'
  | 'packed'
  | `${PackedAlgorithm}:packed`
  | 'fixed-window/first-request:packed'
  | 'block'
  | 'wide-read'
  | 'wide-write'
  | 'packed-read'
  | 'packed-write'

const ALL = Object.keys(BODIES) as AlgorithmName[]

/**
 * The algorithms the packed layout decides in one script: those whose state is two integers.
 * A sliding window's buckets and a log are decided by compare-and-set (cas.ts).
 */
export const PACKED_ALGORITHMS = ['gcra', 'fixed-window', 'token-bucket', 'leaky-bucket'] as const
export type PackedAlgorithm = (typeof PACKED_ALGORITHMS)[number]

/** Whether `algorithm` is one of PACKED_ALGORITHMS. */
export function isPackedAlgorithm(algorithm: AlgorithmName): algorithm is PackedAlgorithm {
  return (PACKED_ALGORITHMS as readonly AlgorithmName[]).includes(algorithm)
}

/**
 * One script per algorithm (its transitions plus the driver), used when every policy of a
 * limiter has that algorithm, and one with all six for limiters that mix algorithms: either
 * way one EVALSHA decides every policy of a key. `<algorithm>:1`: the flat script of a
 * single policy (flat.ts), same contract and decisions with less work per call (fixed-window
 * has one per anchor). `packed`: the generic script of the algorithms whose state is two
 * integers, on the packed layout (packed.ts), and `<algorithm>:packed` their flat scripts
 * there. `block`: sets
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
  'gcra:1': script(flatLua('gcra')),
  'fixed-window:1': script(flatLua('fixed-window')),
  'fixed-window/first-request:1': script(
    flatLua('fixed-window', undefined, false, 'first-request'),
  ),
  'token-bucket:1': script(flatLua('token-bucket')),
  'leaky-bucket:1': script(flatLua('leaky-bucket')),
  'sliding-window:1': script(flatLua('sliding-window')),
  'sliding-log:1': script(flatLua('sliding-log')),
  packed: build(PACKED_ALGORITHMS, PACKED_STATE),
  'gcra:packed': packedFlat('gcra'),
  'fixed-window:packed': packedFlat('fixed-window'),
  'fixed-window/first-request:packed': packedFlat('fixed-window', 'first-request'),
  'token-bucket:packed': packedFlat('token-bucket'),
  'leaky-bucket:packed': packedFlat('leaky-bucket'),
  block: script(BLOCK),
  'wide-read': script(WIDE_READ),
  'wide-write': script(WIDE_WRITE),
  'packed-read': script(PACKED_READ),
  'packed-write': script(PACKED_WRITE),
}
