/**
 * Owns how a two-integer state is written in Redis, once for every script: the pair (a, b) is
 * `a + 1` then `b` in 13 digits when 0 <= b < 1e13 (up to 19 digits, so Redis keeps it as a
 * bare int64: no value allocation, a fixed window or a GCRA key costs under 100 bytes),
 * otherwise `a:b`. The generic scripts' encode_pair/decode_pair (prelude.ts) and the flat
 * scripts' inline read and write (flat/frame.ts) are built from these.
 */

/**
 * Lua: `text_int(s)`, `tonumber(s)` once per script call for each text (a `strtod` in Redis):
 * the decisions of a batch read many equal texts, a fixed window's state or a ring's fields.
 * Every script that reads a pair defines it (the generic prelude, the flat frames).
 */
export const TEXT_INT = `local text_ints = {}
local function text_int(s)
  local n = text_ints[s]
  if n == nil then
    n = tonumber(s)
    text_ints[s] = n
  end
  return n
end
`

/** Lua: whether the pair (a, b) takes the int64 form. */
export const asInteger = (b: string): string => `${b} >= 0 and ${b} < 1e13`

/**
 * Lua: the pair's int64 text. While `a` is 0 to 898 the whole int64 is below 2^53, so it
 * is one exact number, formatted once: every conversion is a `sprintf` in Redis, and the two of
 * `%d%013d` were a tenth of a gcra decision's instructions there (bench/instructions-redis.js).
 */
export const integerText = (a: string, b: string): string =>
  `(${a} >= 0 and ${a} < 899 and string.format('%d', (${a} + 1) * 1e13 + ${b}) or string.format('%d%013d', ${a} + 1, ${b}))`

/** Lua: the pair's other text. */
export const pairText = (a: string, b: string): string => `string.format('%d:%d', ${a}, ${b})`

/**
 * Lua that sets `a`, `b` (already 0, 0) from `v`, the stored text, unless it is nil. An int64
 * from 0 to 2^53 is read as one number and split by arithmetic, which is exact there: one `strtod`
 * in Redis instead of a search, two substrings and two (the split was a sixth of a gcra
 * decision's instructions), once per script call (text_int's memo, written out: a Lua call
 * cost a decision 0.5k). `10000000000000` is 1e13 as an integer literal, so Lua 5.4 keeps
 * `b` an integer; `floor` does the same for `a`. Any other text (`a:b`, or an int64 of more
 * than 16 digits, read only by length: a gcra remainder under a large limit) takes the
 * substrings.
 */
export const decodePair = (v: string, a: string, b: string): string => `if ${v} then
  local whole = text_ints[${v}]
  if whole == nil and #${v} <= 16 then
    whole = tonumber(${v})
    text_ints[${v}] = whole
  end
  if whole and whole >= 0 and whole < 9007199254740992 then
    ${b} = whole % 10000000000000
    ${a} = floor((whole - ${b}) / 10000000000000) - 1
  else
    local sep = string.find(${v}, ':', 1, true)
    if sep then
      ${a}, ${b} = tonumber(string.sub(${v}, 1, sep - 1)), tonumber(string.sub(${v}, sep + 1))
    else
      ${a}, ${b} = tonumber(string.sub(${v}, 1, -14)) - 1, tonumber(string.sub(${v}, -13))
    end
  end
end
`
