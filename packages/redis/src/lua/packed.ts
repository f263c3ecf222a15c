/**
 * The packed layout's side of the scripts (RedisStoreOptions.packed): states are fields of one
 * hash per group, `<prefix>:{%g<group>}:s`, one field per client key and limit (see
 * cas/packed-places.ts). A field has no TTL of its own, so its value carries its
 * expiry: `<expires at>;<core's state vector, comma-separated>`, the same text whichever path
 * wrote it, so they share one state: for gcra, fixed-window and the buckets the flat scripts
 * (one policy, flat/frame.ts) and the generic script below (several); for the rest core, by
 * compare-and-set (cas.ts).
 */

/** How the field functions read a field: `redis.call('HGET', key, field)` unless given. */
const HGET = "redis.call('HGET', key, field)"

/**
 * The field functions every packed script defines, reading a field by `read` (a Lua expression
 * of `key` and `field`: a decision of several limits reads its fields at once, see
 * lua/flat/several.ts). `sweep` sweeps a hash of fields expired at `now` once it has doubled
 * since its last sweep: the count then is kept in the field `%n`, which no field of a state
 * can be. Each field is looked at a bounded number of times per insert, and a hash holds at
 * most about twice its live fields. Needs `unpack`.
 */
export const packedFields = (read = HGET): string => `
local function foreign_field(key, field, v)
  error('sluice: ' .. key .. ' field ' .. field .. ' holds ' .. v .. ', not a state this store wrote')
end

-- A field's number, or false where its text is not one this store writes (an integer as '%d'
-- writes it: no spaces, hex, fraction or exponent), each text checked once per call.
local field_ints = {}
local function field_int(s)
  local n = field_ints[s]
  if n == nil then
    n = tonumber(s)
    if n == nil or n % 1 ~= 0 or string.format('%d', n) ~= s then n = false end
    field_ints[s] = n
  end
  return n
end

local function sweep(key, now)
  local mark = tonumber(redis.call('HGET', key, '%n') or '16')
  local n = redis.call('HLEN', key)
  if n < 2 * mark then return end
  local all, gone = redis.call('HGETALL', key), {}
  for i = 1, #all, 2 do
    local expires = tonumber(string.match(all[i + 1], '^(%d+);'))
    if all[i] ~= '%n' and expires and expires <= now then gone[#gone + 1] = all[i] end
  end
  for i = 1, #gone, 1000 do redis.call('HDEL', key, unpack(gone, i, math.min(i + 999, #gone))) end
  local left = n - #gone
  if left < 16 then left = 16 end
  redis.call('HSET', key, '%n', string.format('%d', left))
end

-- Sets \`field\` of \`key\` to \`value\`, alive for ttl ms: the hash lives at least as long as its
-- longest-lived field (PEXPIRE only ever raises its TTL), and a new field may start a sweep.
local function put_field(key, field, value, ttl, now)
  if redis.call('HSET', key, field, value) == 1 then sweep(key, now) end
  if redis.call('PTTL', key) < ttl then redis.call('PEXPIRE', key, string.format('%d', ttl)) end
end

-- A two-integer state: core's state vector from the field (0, 0 once it has expired at \`now\`,
-- as a key would be gone at its TTL, and not read past its expiry). A field this store did not
-- write fails the call. Cut at its separators, not matched to a pattern (a third of a
-- several-limits decision's Lua), and each number converted once per call (field_int): a
-- batch's fields share expiries and counts.
local function read_field(key, field, now)
  local v = ${read}
  if not v then return 0, 0 end
  local semi = string.find(v, ';', 1, true)
  local comma = semi and string.find(v, ',', semi + 1, true)
  local expires = comma and field_int(string.sub(v, 1, semi - 1))
  if not expires or expires < 0 then foreign_field(key, field, v) end
  if expires <= now then return 0, 0 end
  local x, y = field_int(string.sub(v, semi + 1, comma - 1)), field_int(string.sub(v, comma + 1))
  if not (x and y) then foreign_field(key, field, v) end
  return x, y
end

-- When the client key's block ends (nil: none); a block is \`<expires at>;<ends at>\`.
local function block_field(key, field)
  local v = redis.pcall('HGET', key, field)
  if type(v) == 'string' then return tonumber(string.match(v, ';(%d+)$')) end
end
`

/** The field functions, each field read by its own `HGET`. */
export const PACKED_FIELDS = packedFields()

/**
 * sliding-window's ring in one field (its flat body, core's sliding-window.lua.ts): core's
 * state vector, the newest bucket then one count per ring slot. `read_ring` gives the newest
 * bucket and the non-zero counts by slot (0 and none once expired, the field not read past its
 * expiry, as read_field); `save_ring` writes them back, or deletes the field when the state is
 * empty again. Needs PACKED_FIELDS (`read` and `field_int` as there) and the per-call memos
 * `int_texts` and `int_text` (INT_TEXTS in flat/frame.ts).
 */
export const packedRing = (read = HGET): string => `
local function read_ring(key, field, now, ring)
  local v, c = ${read}, {}
  if not v then return 0, c end
  -- Cut at the separators, as read_field, each number converted once per call (field_int: a
  -- batch's rings share their expiry, newest bucket and small counts); none is negative.
  local semi = string.find(v, ';', 1, true)
  local comma = semi and string.find(v, ',', semi + 1, true)
  local expires = comma and field_int(string.sub(v, 1, semi - 1))
  local newest = expires and field_int(string.sub(v, semi + 1, comma - 1))
  if not newest or expires < 0 or newest < 0 then foreign_field(key, field, v) end
  if expires <= now then return 0, c end
  local from = comma + 1
  for s = 0, ring - 1 do
    local to = string.find(v, ',', from, true)
    if (to == nil) ~= (s == ring - 1) then foreign_field(key, field, v) end
    local x = string.sub(v, from, (to or 0) - 1)
    if x ~= '0' then
      local n = field_int(x)
      if not n or n < 0 then foreign_field(key, field, v) end
      c[s] = n
    end
    from = (to or 0) + 1
  end
  return newest, c
end

-- Each number's text formatted once per call (int_texts), and an empty slot's '0' not at all.
local function save_ring(key, field, newest, c, ring, expires_at, now, slack)
  if expires_at <= now then
    redis.call('HDEL', key, field)
    return
  end
  local head, tail = int_texts[expires_at + slack], int_texts[newest]
  if head == nil then head = int_text(expires_at + slack) end
  if tail == nil then tail = int_text(newest) end
  local value
  if ring == 2 then
    -- The default precision's two slots, joined at once: no table to grow and concat.
    local a, b = c[0], c[1]
    if a == nil or a == 0 then a = '0' else a = int_texts[a] or int_text(a) end
    if b == nil or b == 0 then b = '0' else b = int_texts[b] or int_text(b) end
    value = head .. ';' .. tail .. ',' .. a .. ',' .. b
  else
    local parts = { head .. ';' .. tail }
    for s = 0, ring - 1 do
      local n = c[s]
      if n == nil or n == 0 then
        parts[s + 2] = '0'
      else
        local text = int_texts[n]
        if text == nil then text = int_text(n) end
        parts[s + 2] = text
      end
    end
    value = table.concat(parts, ',')
  end
  put_field(key, field, value, expires_at - now + slack, now)
end
`

/** sliding-window's ring functions, each field read by its own `HGET`. */
export const PACKED_RING = packedRing()

/**
 * The packed layout's places for the generic driver (the functions KEY_STATE in prelude.ts
 * defines for keys of their own): KEYS[i] is policy i's hash (its group's), ARGV carries six
 * per policy, the field last, then the block's field. An expired field reads as empty, as a
 * key gone at its TTL would; a state that is empty again is deleted.
 */
export const PACKED_STATE = `${PACKED_FIELDS}
local PER = 6
local function place(i) return { KEYS[i], ARGV[6 + i * 6] } end
-- Length first, so no field and hash name can run together into another pair's.
local function place_id(i)
  local field = ARGV[6 + i * 6]
  return #field .. ':' .. field .. KEYS[i]
end

local function load_pair(place, swapped)
  local x, y = read_field(place[1], place[2], NOW)
  if swapped then return y, x end
  return x, y
end

local function save_pair(place, a, b, expires_at, now, swapped)
  if expires_at <= now then
    call('HDEL', place[1], place[2])
    return
  end
  if swapped then a, b = b, a end
  put_field(place[1], place[2], format('%d;%d,%d', expires_at + SLACK, a, b), expires_at - now + SLACK, now)
end

local function block_end(n)
  return block_field(block_key(n), ARGV[#ARGV])
end
`
