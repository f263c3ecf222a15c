/**
 * sliding-window's flat scripts on keys of their own: the names of a ring's slots (its hash's
 * fields) and the size of a ring and of its reply, each a constant where the policy is baked in.
 */
import type { LuaFrame } from './lua'

/**
 * A ring slot's field name: with the precision baked in (and small), from a table the script
 * builds once per call (a batch's decisions share it), else formatted where it is needed. The
 * table is named by its size, so policies of several precisions in one script have their own.
 */
const FIELD_TABLE_MAX = 30
const fieldTable = (baked: LuaFrame['baked']): string | undefined =>
  baked !== undefined && baked.precision <= FIELD_TABLE_MAX
    ? `FIELD_${baked.precision + 1}`
    : undefined
export const fieldNames = (baked: LuaFrame['baked']): string => {
  const table = fieldTable(baked)
  if (table === undefined || baked === undefined) return ''
  const slots = Array.from({ length: baked.precision + 1 }, (_, i) => i)
  const names = slots.map((i) => `[${i}] = '${i}'`)
  const numbers = slots.map((i) => `['${i}'] = ${i}`)
  return `local ${table} = { ${names.join(', ')} }
local ${slotTable(table)} = { ${numbers.join(', ')} }
`
}
/** The table of slots by field name, beside the field names' (see fieldTable). */
const slotTable = (fieldTableName: string): string => fieldTableName.replace('FIELD_', 'SLOT_')
/** A field name's slot: from the baked table, else read (a field of another precision too). */
export const slotOf = (baked: LuaFrame['baked'], field: string): string => {
  const table = fieldTable(baked)
  return table !== undefined
    ? `(${slotTable(table)}[${field}] or text_int(${field}))`
    : `text_int(${field})`
}
export const fieldOf = (baked: LuaFrame['baked'], slot: string): string => {
  const table = fieldTable(baked)
  return table !== undefined ? `${table}[${slot}]` : `int_text(${slot})`
}

/** `size` (a bucket's ms) and `ring` (its slots): constants where the policy is baked in. */
export const ringSize = (baked: LuaFrame['baked']): string =>
  baked !== undefined
    ? `local size, ring = ${baked.windowMs / baked.precision}, ${baked.precision + 1}`
    : 'local size = window / precision\nlocal ring = precision + 1'

/** Rings of up to this many slots get their reply's room at once (no table resize as it fills). */
const REPLY_ROOM_MAX = 4

/** The reply table, with room for every slot of a small baked ring (nils, filled in order). */
export const replyTable = (baked: LuaFrame['baked']): string =>
  baked !== undefined && baked.precision + 1 <= REPLY_ROOM_MAX
    ? `{ now, 0${', nil, nil'.repeat(baked.precision + 1)} }`
    : '{ now, 0 }'
