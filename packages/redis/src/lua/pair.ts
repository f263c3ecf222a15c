/**
 * Owns how a two-integer state is written in Redis, once for every script: the pair (a, b) is
 * `a + 1` then `b` in 13 digits when 0 <= b < 1e13 (up to 19 digits, so Redis keeps it as a
 * bare int64: no value allocation, a fixed window or a GCRA key costs under 100 bytes),
 * otherwise `a:b`. The generic scripts' encode_pair/decode_pair (prelude.ts) and the flat
 * scripts' inline read and write (flat/frame.ts) are built from these.
 */

/** Lua: whether the pair (a, b) takes the int64 form. */
export const asInteger = (b: string): string => `${b} >= 0 and ${b} < 1e13`

/** Lua: the pair's int64 text. */
export const integerText = (a: string, b: string): string =>
  `string.format('%d%013d', ${a} + 1, ${b})`

/** Lua: the pair's other text. */
export const pairText = (a: string, b: string): string => `string.format('%d:%d', ${a}, ${b})`

/** Lua that sets `a`, `b` (already 0, 0) from `v`, the stored text, unless it is nil. */
export const decodePair = (v: string, a: string, b: string): string => `if ${v} then
  local sep = string.find(${v}, ':', 1, true)
  if sep then
    ${a}, ${b} = tonumber(string.sub(${v}, 1, sep - 1)), tonumber(string.sub(${v}, sep + 1))
  else
    ${a}, ${b} = tonumber(string.sub(${v}, 1, -14)) - 1, tonumber(string.sub(${v}, -13))
  end
end
`
