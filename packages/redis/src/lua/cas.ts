/**
 * The scripts of the plans core decides in the store's process (cas/runner.ts): wide plans
 * (numbers past 2^53, which Lua's doubles cannot hold) and every plan of a packed store. Each
 * storage has a read and a compare-and-set write; none computes with the state, they move
 * strings (and read TIME).
 */
import { UNPACK } from './flat/frame'
import { PACKED_FIELDS } from './packed'

/**
 * Keys of their own (wide plans): reads what a decision needs, '' for a missing key.
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
 * Keys of their own: writes the new values when every checked key still holds what the read
 * saw: 1, else 0 and nothing written.
 *
 * KEYS[1..c]     the keys checked: the written state keys, and for a consume the block
 * ARGV[1]        c
 * ARGV[2..c + 1] what the read saw of each ('' for missing)
 * then, per written key (KEYS[1], KEYS[2], ... in order): the new value ('' deletes it) and
 * its TTL in ms
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

/**
 * Packed (RedisStoreOptions.packed): reads fields of the group's hashes, '' for a missing one.
 *
 * KEYS[1..k]  the hashes (one slot: they share the group's hash tag)
 * ARGV[1]     '1': read Redis TIME; '' not
 * ARGV[2..]   per field: the index of its hash in KEYS, the field
 *
 * Reply: { now in ms or '', the value of each field }.
 */
export const PACKED_READ = `
local out = { '' }
if ARGV[1] == '1' then
  local t = redis.call('TIME')
  out[1] = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
for a = 2, #ARGV, 2 do
  out[#out + 1] = redis.call('HGET', KEYS[tonumber(ARGV[a])], ARGV[a + 1]) or ''
end
return out
`

/**
 * Packed: writes fields when every checked field still holds what the read saw: 1, else 0 and
 * nothing written. A value is \`<expires at>;<state>\`, written and swept as packed.ts says.
 *
 * KEYS[1..k]  the hashes (one slot)
 * ARGV[1]     now in ms (what expired means to the sweep)
 * ARGV[2]     c, then c triples: hash index, field, what the read saw ('' for missing)
 * then, to the end, per field written: hash index, field, value ('' deletes it), TTL in ms
 */
export const PACKED_WRITE = `
local unpack = ${UNPACK}
${PACKED_FIELDS}
local now = tonumber(ARGV[1])
local c = tonumber(ARGV[2])
local a = 3
for i = 1, c do
  if (redis.call('HGET', KEYS[tonumber(ARGV[a])], ARGV[a + 1]) or '') ~= ARGV[a + 2] then return 0 end
  a = a + 3
end
for b = a, #ARGV, 4 do
  local key, field, value = KEYS[tonumber(ARGV[b])], ARGV[b + 1], ARGV[b + 2]
  if value == '' then
    redis.call('HDEL', key, field)
  else
    put_field(key, field, value, tonumber(ARGV[b + 3]), now)
  end
end
return 1
`
