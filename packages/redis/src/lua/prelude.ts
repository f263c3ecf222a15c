/**
 * Helpers every script starts with. Lua 5.1 numbers are doubles: every value the scripts handle
 * is an integer below 2^53 (core caps capacity x window at 2^50), so `math.floor`/`math.ceil`
 * and `%` give the same results as core's `Math.floor`/`Math.ceil`/`%` for the same inputs.
 *
 * Numbers never reach Redis through Lua's own number-to-string conversion (`%.14g`, which
 * turns 2^50 into `1.1258999068426e+15`): `int(n)` formats them with `%d`.
 */
import { UNPACK } from './flat/frame'
import { asInteger, decodePair, integerText, pairText, TEXT_INT } from './pair'

export const PRELUDE = `
-- Locals, so that a batch (driver.ts) can give each decision its own.
local KEYS, ARGV = KEYS, ARGV
local floor, ceil, max, min = math.floor, math.ceil, math.max, math.min
local tonumber, tostring, unpack = tonumber, tostring, ${UNPACK}
local format, sub, find = string.format, string.sub, string.find
local call = redis.call
local SLACK, NOW = 0, 0
local SEQ, REQUEST = 0, ''
-- maxDelayMs of the request (reservations, meters only); 0: none.
local MAXD = 0
local ALG = {}

local function int(n)
  return format('%d', n)
end
${TEXT_INT}
-- redis.call(cmd, key, ...args) in slices, since unpack() of thousands of values overflows
-- Lua's C stack. Slices are even-sized so field/value and score/member pairs stay together.
local function call_many(cmd, key, args)
  for i = 1, #args, 1000 do call(cmd, key, unpack(args, i, min(i + 999, #args))) end
end

-- Two integers as one string (pair.ts).
local function encode_pair(a, b)
  if ${asInteger('b')} then return ${integerText('a', 'b')} end
  return ${pairText('a', 'b')}
end

local function decode_pair(v)
  local a, b = 0, 0
  ${decodePair('v', 'a', 'b')}  return a, b
end

-- The client key's block: KEYS[n + 1], or on a Cluster the name made from KEYS[1]'s hash tag
-- (see driver.ts for why it is not declared there).
local function block_key(n)
  return KEYS[n + 1] or sub(KEYS[1], 1, find(KEYS[1], '}:', 1, true) + 1) .. 'b'
end
`

/**
 * Where the generic scripts keep state (the default layout): policy i in a key of its own,
 * KEYS[i], its pair as one int64 (encode_pair) with a TTL until the state is empty again; the
 * block in a key of its own too. The packed layout has its own (packed.ts), with the same
 * functions: `PER`, the ARGV per policy; `place(i)`, where policy i lives, and `place_id(i)`,
 * the same as a string (two policies at one place share one state); `load_pair(place,
 * swapped)` and `save_pair(place, a, b, expires_at, now, swapped)`, a two-integer state in its
 * encode_pair order (`swapped`: core's state vector holds it as (b, a), which only the packed
 * layout's text follows); `block_end(n)`, when the key's block ends (nil: none).
 */
export const KEY_STATE = `
local PER = 5
local function place(i) return KEYS[i] end
local place_id = place

local function load_pair(key)
  return decode_pair(call('GET', key))
end

-- Writes a two-integer state with a TTL that ends when the state is empty again.
local function save_pair(key, a, b, expires_at, now)
  if expires_at <= now then
    call('DEL', key)
  else
    call('SET', key, encode_pair(a, b), 'PX', int(expires_at - now + SLACK))
  end
end

local function block_end(n)
  local v = redis.pcall('GET', block_key(n))
  if type(v) == 'string' then return tonumber(v) end
end
`
