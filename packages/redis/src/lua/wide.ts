/**
 * The two scripts of wide plans (see wide.ts): a read, and a compare-and-set write. Core
 * decides in between, in the store's process: a wide policy's numbers pass 2^53, which Lua's
 * doubles cannot hold, so these scripts only move strings (and read TIME).
 */

/**
 * Reads what a decision needs, as strings ('' for a missing key).
 *
 * KEYS[1..n]  the state keys; KEYS[n + 1] the key's block (consume, peek)
 * ARGV[1]     n
 * ARGV[2]     '1': read Redis TIME (time: 'server'); '' not
 *
 * Reply: { now in ms or '', the block or '', the value of each state key }.
 */
export const WIDE_READ = `
local n = tonumber(ARGV[1])
local out = { '', '' }
if ARGV[2] == '1' then
  local t = redis.call('TIME')
  out[1] = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
if KEYS[n + 1] then out[2] = redis.call('GET', KEYS[n + 1]) or '' end
for i = 1, n do out[i + 2] = redis.call('GET', KEYS[i]) or '' end
return out
`

/**
 * Writes the new values when every checked key still holds what the read saw: 1, else 0 and
 * nothing written.
 *
 * KEYS[1..c]     the keys checked: the written state keys, and for a consume the block
 * ARGV[1]        c
 * ARGV[2..c + 1] what the read saw of each ('' for missing)
 * then, per written key (KEYS[1], KEYS[2], ... in order, w of them): the new value ('' deletes
 * it) and its TTL in ms
 */
export const WIDE_WRITE = `
local c = tonumber(ARGV[1])
for i = 1, c do
  if (redis.call('GET', KEYS[i]) or '') ~= ARGV[i + 1] then return 0 end
end
local i = 1
for a = c + 2, #ARGV, 2 do
  if ARGV[a] == '' then
    redis.call('DEL', KEYS[i])
  else
    redis.call('SET', KEYS[i], ARGV[a], 'PX', ARGV[a + 1])
  end
  i = i + 1
end
return 1
`
