/**
 * Owns the one Lua compiler: every script RedisStore runs is compile(shape) of a shape
 * (shape.ts), built from the algorithms' Lua fragments (the registry's `lua`, core's
 * `<algorithm>.lua.ts`) and the frames around them. lua/index.ts lists the shapes.
 */
import { DRIVER, DRIVER_BATCH } from './driver'
import { frameOf, head, tail } from './flat/frame'
import { severalLua } from './flat/several'
import { wideFlatLua } from './flat/wide'
import { PACKED_STATE } from './packed'
import { KEY_STATE, PRELUDE } from './prelude'
import { PACKED_WIDE_STATE, WIDE_STATE } from './wide'
import type { FlatShape, GenericShape, ScriptShape } from './shape'

/** The Lua of a script of `shape`. */
export function compile(shape: ScriptShape): string {
  if (shape.engine === 'several') return severalLua(shape)
  if (shape.engine === 'wide-flat') return wideFlatLua(shape)
  return shape.engine === 'generic' ? generic(shape) : flat(shape)
}

/**
 * The generic engine: the prelude, where states live (the layout's load_pair, save_pair,
 * block_end), each variant's module (what modules share first, once), then the driver of one
 * call or of a batch.
 */
function generic(shape: GenericShape): string {
  const shared = new Set<string>()
  const modules = new Set<string>()
  for (const { lua } of shape.variants) {
    if (lua.shared !== undefined) shared.add(lua.shared)
    modules.add(lua.module)
  }
  const state = STATES[shape.layout]
  const driver = shape.calls === 'batch' ? DRIVER_BATCH : DRIVER
  return [PRELUDE, state, ...shared, ...modules, driver].join('')
}

const STATES = {
  keys: KEY_STATE,
  packed: PACKED_STATE,
  wide: WIDE_STATE,
  'packed-wide': PACKED_WIDE_STATE,
}

/** The flat engine: the variant's flat body inside the frame of the shape. */
function flat(shape: FlatShape): string {
  const frame = frameOf(shape)
  const { lua } = shape.variant
  return `${lua.flatSetup?.(frame) ?? ''}${head(shape)}${lua.flat(frame)}${tail(shape)}`
}
