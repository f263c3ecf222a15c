/**
 * Helpers every script starts with. Lua 5.1 numbers are doubles: every value the scripts handle
 * is an integer below 2^53 (core caps capacity x window at 2^50), so `math.floor`/`math.ceil`
 * and `%` give the same results as core's `Math.floor`/`Math.ceil`/`%` for the same inputs.
 *
 * Numbers never reach Redis through Lua's own number-to-string conversion (`%.14g`, which
 * turns 2^50 into `1.1258999068426e+15`): `int(n)` formats them with `%d`.
 */
import { UNPACK } from './flat/frame'

export const PRELUDE = `
local floor, ceil, max, min = math.floor, math.ceil, math.max, math.min
local tonumber, tostring, unpack = tonumber, tostring, ${UNPACK}
local format, sub, find = string.format, string.sub, string.find
local call = redis.call
local SLACK = 0
local SEQ, REQUEST = 0, ''
-- maxDelayMs of the request (reservations, meters only); 0: none.
local MAXD = 0
local ALG = {}

local function int(n)
  return format('%d', n)
end

-- redis.call(cmd, key, ...args) in slices, since unpack() of thousands of values overflows
-- Lua's C stack. Slices are even-sized so field/value and score/member pairs stay together.
local function call_many(cmd, key, args)
  for i = 1, #args, 1000 do call(cmd, key, unpack(args, i, min(i + 999, #args))) end
end

-- Two integers (a >= 0, 0 <= b < 1e13) as one decimal string: a + 1, then b in 13 digits.
-- Up to 19 digits, so Redis keeps it as a bare int64 (no value allocation): a fixed window
-- or a GCRA key costs under 100 bytes. Anything else falls back to 'a:b'.
local function encode_pair(a, b)
  if b >= 0 and b < 1e13 then return format('%d%013d', a + 1, b) end
  return format('%d:%d', a, b)
end

local function decode_pair(v)
  if not v then return 0, 0 end
  local sep = find(v, ':', 1, true)
  if sep then return tonumber(sub(v, 1, sep - 1)), tonumber(sub(v, sep + 1)) end
  return tonumber(sub(v, 1, -14)) - 1, tonumber(sub(v, -13))
end

-- Writes a two-integer state with a TTL that ends when the state is empty again.
local function save_pair(key, a, b, expires_at, now)
  if expires_at <= now then
    call('DEL', key)
  else
    call('SET', key, encode_pair(a, b), 'PX', int(expires_at - now + SLACK))
  end
end
`
