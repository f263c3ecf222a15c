/**
 * Owns holding repeated keys in a batch script (HOLD_REPEATED): a key that comes more than once
 * in one batch is read once, decided on in order and written once, when the store flags it.
 */
import { KEYS_REPEAT } from './flags'

/**
 * Batch scripts of the algorithms whose state is one string or one hash (all but sliding-log):
 * a key that comes more than once in the batch (one client's burst, a shared limit) has its
 * state read once, held here while its decisions run in order, each on what the one before
 * left, and written once at the end (flush, from \`tail\`), with the TTL the last decision
 * set. Each decision's reply is what it would be alone; Redis ends in the same state as after
 * the decisions one by one. Keys that come once go straight to Redis, as before.
 *
 * \`call\` stands in for redis.call in \`one\`: reads of a held key come from the held state, and
 * its writes (SET PX, DEL, HSET, HDEL, PEXPIRE: all that the decisions write) change only it.
 * Only when the store says some key repeats (the 'r' flag in ARGV[3]): else \`call\` is
 * redis.call itself, and no key is looked for twice. The scan and the stand-in cost about a
 * fourteenth of a gcra decision's instructions in Redis, in the batch with no key twice that
 * is the common one (bench/instructions-redis.js). A flag the store got wrong costs only that:
 * decisions one by one, unheld, leave the same replies and state.
 * `count`: how many of KEYS, from the first, are state keys.
 */
export const holdRepeated = (
  count: string,
): string => `local rcall, repeated, held, dirty = call, {}, {}, {}
local holding = ${KEYS_REPEAT}
if holding then
  local seen = {}
  for i = 1, ${count} do
    if seen[KEYS[i]] then repeated[KEYS[i]] = true else seen[KEYS[i]] = true end
  end
end
local function held_hash(c, key)
  if c.h == nil then
    local h, was = {}, {}
    if not c.deleted then
      local all = rcall('HGETALL', key)
      for i = 1, #all, 2 do
        h[all[i]] = all[i + 1]
        was[all[i]] = true
      end
    end
    c.h, c.was = h, was
  end
  return c.h
end
local function held_call(cmd, key, ...)
  if not repeated[key] then return rcall(cmd, key, ...) end
  local c = held[key]
  if c == nil then
    c = {}
    held[key] = c
  end
  if cmd == 'GET' then
    if c.v == nil then c.v = rcall('GET', key) end
    return c.v
  elseif cmd == 'HGETALL' then
    local all = {}
    for field, value in pairs(held_hash(c, key)) do
      all[#all + 1] = field
      all[#all + 1] = value
    end
    return all
  end
  if not c.dirty then
    c.dirty = true
    dirty[#dirty + 1] = key
  end
  local args = { ... }
  if cmd == 'SET' then
    c.v, c.px = args[1], args[3]
  elseif cmd == 'DEL' then
    c.v, c.px, c.deleted = false, nil, true
    if c.h ~= nil then c.h = {} end
  elseif cmd == 'HSET' then
    local h = held_hash(c, key)
    for i = 1, #args, 2 do h[args[i]] = args[i + 1] end
  elseif cmd == 'HDEL' then
    local h = held_hash(c, key)
    for i = 1, #args do h[args[i]] = nil end
  elseif cmd == 'PEXPIRE' then
    c.px = args[1]
  else
    error('sluice: ' .. cmd .. ' on a held key')
  end
  return 1
end
-- Field lists in runs of 1000 arguments (an even number: field-value pairs stay whole), as
-- unpack cannot spread a list of any length.
local function in_chunks(cmd, key, list)
  for i = 1, #list, 1000 do rcall(cmd, key, unpack(list, i, math.min(i + 999, #list))) end
end
local function flush()
  for i = 1, #dirty do
    local key = dirty[i]
    local c = held[key]
    if c.h == nil then
      -- A string: its last SET PX, or gone.
      if c.v then rcall('SET', key, c.v, 'PX', c.px) else rcall('DEL', key) end
    else
      -- A hash: the fields it holds now, the ones it lost, and the TTL its last PEXPIRE set.
      local set, gone = {}, {}
      for field, value in pairs(c.h) do
        set[#set + 1] = field
        set[#set + 1] = value
      end
      if c.deleted then
        rcall('DEL', key)
      else
        for field in pairs(c.was) do
          if c.h[field] == nil then gone[#gone + 1] = field end
        end
      end
      if #set == 0 then
        if not c.deleted then rcall('DEL', key) end
      else
        in_chunks('HDEL', key, gone)
        in_chunks('HSET', key, set)
        if c.px then rcall('PEXPIRE', key, c.px) end
      end
    end
  end
end
local call = holding and held_call or rcall
`

/** HOLD_REPEATED of a batch of one key per decision: KEYS[1] to KEYS[m]. */
export const HOLD_REPEATED = holdRepeated('m')
