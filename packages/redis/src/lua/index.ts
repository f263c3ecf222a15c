import { createHash } from 'node:crypto'
import type { AlgorithmName } from '@sluice/core'
import { DRIVER } from './driver'
import { FIXED_WINDOW } from './fixed-window'
import { GCRA } from './gcra'
import { LEAKY_BUCKET } from './leaky-bucket'
import { METER } from './meter'
import { PRELUDE } from './prelude'
import { SLIDING_LOG } from './sliding-log'
import { SLIDING_WINDOW } from './sliding-window'
import { TOKEN_BUCKET } from './token-bucket'

/** One Lua script as RedisStore registers it (`defineCommand`) and runs it (EVALSHA). */
export interface LuaScript {
  /** The ioredis command name it is defined under; carries the SHA so versions never clash. */
  readonly command: string
  readonly lua: string
  /** SHA1 of `lua`: what SCRIPT LOAD returns and EVALSHA runs. */
  readonly sha: string
}

/** Short codes the scripts know the algorithms by (the same as in policy ids). */
export const ALGORITHM_CODES: Readonly<Record<AlgorithmName, string>> = {
  'fixed-window': 'fw',
  'sliding-window': 'sw',
  'sliding-log': 'sl',
  'token-bucket': 'tb',
  'leaky-bucket': 'lb',
  gcra: 'gc',
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

function build(name: string, algorithms: readonly AlgorithmName[]): LuaScript {
  const parts = [PRELUDE]
  if (algorithms.some((a) => NEEDS_METER.has(a))) parts.push(METER)
  for (const algorithm of algorithms) parts.push(BODIES[algorithm])
  parts.push(DRIVER)
  const lua = parts.join('')
  const sha = createHash('sha1').update(lua).digest('hex')
  return { command: `sluice_${name}_${sha.slice(0, 8)}`, lua, sha }
}

const ALL = Object.keys(BODIES) as AlgorithmName[]

/**
 * One script per algorithm (its transitions plus the driver), used when every policy of a
 * limiter has that algorithm, and one with all six for limiters that mix algorithms: either
 * way one EVALSHA decides every policy of a key.
 */
export const SCRIPTS: Readonly<Record<AlgorithmName | 'mixed', LuaScript>> = {
  'fixed-window': build('fw', ['fixed-window']),
  'sliding-window': build('sw', ['sliding-window']),
  'sliding-log': build('sl', ['sliding-log']),
  'token-bucket': build('tb', ['token-bucket']),
  'leaky-bucket': build('lb', ['leaky-bucket']),
  gcra: build('gc', ['gcra']),
  mixed: build('mixed', ALL),
}
