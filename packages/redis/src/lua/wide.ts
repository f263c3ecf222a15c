/**
 * Where the wide script keeps state (route.ts, layout `wide`): policy i in a key of its own,
 * KEYS[i] (`<state key>:v`), holding core's state vector as text, its numbers joined by commas,
 * with a TTL until the state is empty again: the text compare-and-set wrote there before
 * (cas/runner.ts), so either reads what the other wrote. The same functions as KEY_STATE
 * (prelude.ts), and `load_vector(key, slots)` and `save_vector(key, text, expires_at, now)`
 * for a state of more than two numbers (the wide buckets').
 */
import { PACKED_STATE } from './packed'

export const WIDE_STATE = `
local PER = 5
local function place(i) return KEYS[i] end
local place_id = place

-- A state vector's text, two or three integers (the wide meters'), as one pattern each: one
-- match reads them all, where splitting and checking each cost a C call apiece.
local VECTOR = { [2] = '^(%-?%d+),(%-?%d+)$', [3] = '^(%-?%d+),(%-?%d+),(%-?%d+)$' }

-- core's state vector of \`slots\` numbers (all 0 when the key is missing); a value this store
-- did not write fails the call.
local function load_vector(key, slots)
  local v = call('GET', key)
  if not v then
    if slots == 2 then return { 0, 0 } end
    return { 0, 0, 0 }
  end
  local a, b, c = string.match(v, VECTOR[slots])
  if a == nil then error('sluice: ' .. key .. ' holds ' .. v .. ', not a state this store wrote') end
  if slots == 2 then return { tonumber(a), tonumber(b) } end
  return { tonumber(a), tonumber(b), tonumber(c) }
end

-- Writes a state's text with a TTL that ends when the state is empty again.
local function save_vector(key, text, expires_at, now)
  if expires_at <= now then
    call('DEL', key)
  else
    call('SET', key, text, 'PX', int(expires_at - now + SLACK))
  end
end

local function load_pair(key, swapped)
  local s = load_vector(key, 2)
  if swapped then return s[2], s[1] end
  return s[1], s[2]
end

local function save_pair(key, a, b, expires_at, now, swapped)
  if swapped then a, b = b, a end
  save_vector(key, format('%d,%d', a, b), expires_at, now)
end

local function block_end(n)
  local v = redis.pcall('GET', block_key(n))
  if type(v) == 'string' then return tonumber(v) end
end
`

/**
 * The wide script on the packed layout (RedisStoreOptions.packed): PACKED_STATE (packed.ts),
 * whose fields already hold core's state vector as text (\`<expires at>;<vector>\`), and the
 * vectors of more than two numbers beside its pairs, read as missing once expired.
 */
export const PACKED_WIDE_STATE = `${PACKED_STATE}
local function load_vector(place, slots)
  local v = call('HGET', place[1], place[2])
  local s, parts = {}, {}
  for i = 1, slots do s[i] = 0 end
  if not v then return s end
  local expires, rest = string.match(v, '^(%d+);([-,%d]+)$')
  if rest then
    for x in string.gmatch(rest, '[^,]+') do parts[#parts + 1] = tonumber(x) end
  end
  if not expires or #parts ~= slots then
    error('sluice: ' .. place[1] .. ' field ' .. place[2] .. ' holds ' .. v .. ', not a state this store wrote')
  end
  if tonumber(expires) <= NOW then return s end
  return parts
end

local function save_vector(place, text, expires_at, now)
  if expires_at <= now then
    call('HDEL', place[1], place[2])
    return
  end
  put_field(place[1], place[2], format('%d;', expires_at + SLACK) .. text, expires_at - now + SLACK, now)
end
`
