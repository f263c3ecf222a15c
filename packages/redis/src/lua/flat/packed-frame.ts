/**
 * Owns the flat scripts' side of the packed layout (lua/packed.ts): their inputs, the state
 * read from its field, and the pair written back, for frame.ts.
 */
import { PACKED_FIELDS, PACKED_RING } from '../packed'
import type { Calls, Variant } from '../shape'

/**
 * The packed layout's inputs (lua/packed.ts): KEYS[1] the states' hash, KEYS[2] the block's;
 * after the policy, ARGV[12] the client key's field and ARGV[13] its block's field, as in the
 * packed generic script for one policy (a batch passes them to `one`). Defines the field
 * functions (PACKED_FIELDS, and sliding-window's PACKED_RING).
 */
export function packedInputs(variant: Variant, calls: Calls): string {
  // Core's state vector holds some pairs as (sb, sa) (LuaFragments.swapped): the field follows it.
  return `${calls === 'batch' ? '' : 'local field, bfield = ARGV[12], ARGV[13]\n'}local swapped = ${variant.lua.swapped === true}
${PACKED_FIELDS}${variant.state === 'ring' ? PACKED_RING : ''}`
}

/** Reads the state's field into `sa`, `sb` (read_field, lua/packed.ts). */
export const PACKED_HEAD = `local sa, sb = read_field(key, field, now)
if swapped then sa, sb = sb, sa end
`

/**
 * Writes the pair (a, b) expiring at `expires_at` to the field, as core's state vector: each
 * number's text formatted once per call (int_texts, INT_TEXTS in frame.ts), as a batch's
 * decisions share an expiry, a window's start or a meter's tat, where one `string.format` of
 * all three was three `sprintf`s every time.
 */
export function packedSave(a: string, b: string, expiresAt: string): string {
  return `
if ${expiresAt} <= now then
  call('HDEL', key, field)
else
  local e, x, y = ${expiresAt} + slack, ${a}, ${b}
  if swapped then x, y = y, x end
  put_field(key, field, (int_texts[e] or int_text(e)) .. ';' .. (int_texts[x] or int_text(x)) .. ',' .. (int_texts[y] or int_text(y)), ${expiresAt} - now + slack, now)
end
`
}
