import { peekOr, refundBranch, type LuaFragments, type LuaFrame } from './lua'

/**
 * sliding-log's Lua, mirroring sliding-log.ts on a sorted set instead of an
 * array: one member per admitted cost unit, scored by its timestamp. Members are
 * `<request id>.<n>` (the request id is unique per request, n counts within the call), so
 * requests at the same ms are never collapsed into one member. A timestamp is live while it
 * is inside (now - window, now]. The key expires when its newest timestamp leaves the window.
 *
 * Unlike the other algorithms the state is not loaded into a vector: `load` returns the key
 * and every step reads the sorted set, so a call costs O(log n) whatever the limit.
 *
 * One source for both script families: the admission test with its reply, and the refund of a
 * request admitted at `at`, are fragments the generic module below and the flat body
 * below are built from. They read `key`, `now`, `cost`, `limit` and `window`.
 */

/**
 * The log as decide reads it: `live` timestamps in (now - window, now], the `newest`, and the
 * one that must expire before a request of `cost` fits (`must`); `reply` = { live, newest -
 * now, must - now, now } (0 where decide reads nothing; `now`, the timestamp a consume logs:
 * its exact refund, StoreResult.at), and `after`, the live range's lower bound.
 */
const SL_LOOK = `local after = '(' .. string.format('%d', now - window)
local live = call('ZCOUNT', key, after, '+inf')
local newest = now
if live > 0 then newest = tonumber(call('ZRANGE', key, -1, -1, 'WITHSCORES')[2]) end
local must = now
if cost <= limit and live + cost > limit then
  must = tonumber(call('ZRANGEBYSCORE', key, after, '+inf', 'WITHSCORES', 'LIMIT', live + cost - limit - 1, 1)[2])
end
local reply = { live, newest - now, must - now, now }
`

/** Whether the request fits (decide's admission test). */
const SL_FITS = 'cost <= limit and live + cost <= limit'

/**
 * Gives back `cost` timestamps at `at` (a request admitted then), unless `at` has left the
 * window; `removed` says whether any went. Then the key's TTL follows its newest timestamp.
 */
const SL_REFUND_AT = `local removed = false
if at > now - window then
  local at_s = string.format('%d', at)
  local gone = call('ZRANGEBYSCORE', key, at_s, at_s, 'LIMIT', 0, cost)
  if #gone > 0 then
    for i = 1, #gone, 1000 do call('ZREM', key, unpack(gone, i, math.min(i + 999, #gone))) end
    removed = true
  end
end
`

/**
 * Counts a request of `cost` at `now`: the timestamps that left the window go, and one member
 * per unit comes, named by `member(i)` for unit i (unique per request across processes).
 */
function slAdd(member: (i: string) => string): string {
  return `call('ZREMRANGEBYSCORE', key, '-inf', string.format('%d', now - window))
local at = string.format('%d', now)
if cost == 1 then
  call('ZADD', key, at, ${member('1')})
else
  local args = {}
  for i = 1, cost do
    args[#args + 1] = at
    args[#args + 1] = ${member('i')}
  end
  for i = 1, #args, 1000 do call('ZADD', key, unpack(args, i, math.min(i + 999, #args))) end
end
`
}

const SLIDING_LOG = `
local sliding_log = {}
ALG.sl = sliding_log

local function sl_newest(key)
  local newest = call('ZRANGE', key, -1, -1, 'WITHSCORES')
  if newest[2] then return tonumber(newest[2]) end
  return nil
end

local function sl_expire(key, now, p)
  local newest = sl_newest(key)
  if not newest then return end
  local ttl = newest + p.window - now
  if ttl <= 0 then call('DEL', key) else call('PEXPIRE', key, int(ttl + SLACK)) end
end

function sliding_log.load(key)
  return key
end

function sliding_log.look(key, now, p, cost)
  local limit, window = p.limit, p.window
  ${SL_LOOK}
  return ${SL_FITS}, reply
end

function sliding_log.apply(key, now, p, cost)
  local window = p.window
  -- Members are numbered across the policies of the call (SEQ), so two that share a key add both.
  ${slAdd((i) => `REQUEST .. '.' .. (SEQ + ${i})`)}
  SEQ = SEQ + cost
  sl_expire(key, now, p)
end

function sliding_log.refund(key, now, p, cost, at)
  if at == nil then
    -- A reward: the newest timestamps go first.
    local gone = call('ZRANGE', key, -cost, -1)
    if #gone == 0 then return end
    call_many('ZREM', key, gone)
    sl_expire(key, now, p)
    return
  end
  local window = p.window
  ${SL_REFUND_AT}
  if removed then sl_expire(key, now, p) end
end

function sliding_log.penalize(key, now, p, cost)
  local live = call('ZCOUNT', key, '(' .. int(now - p.window), '+inf')
  local add = min(cost, p.limit - live)
  if add > 0 then sliding_log.apply(key, now, p, add) end
end

function sliding_log.save()
end
`

/**
 * The flat body: the same sorted set as the module above, one
 * member `<request id>.<n>` per admitted cost unit scored by its timestamp, and the same TTL
 * (the newest timestamp's end of window). A consume is TIME, GET (block), ZCOUNT, ZRANGE (the
 * newest, when any is live), ZRANGEBYSCORE (rejections only), and when admitted
 * ZREMRANGEBYSCORE, ZADD and PEXPIRE: after the ZADD the newest score is max(newest, now), so
 * it is not read again.
 *
 * The reply is `{ live, newest - now, mustExpire - now, now }` (0 where decide does not read it):
 * everything core's decide reads of the log, from which the store computes the outcome with
 * core's own decide (@sluice/redis flat-outcome.ts). Refund (with a time) as sliding_log.refund. Negative
 * integer reply: the key's block.
 */
const flat = (frame: LuaFrame): string => `
${refundBranch(
  frame,
  `local at = now - tonumber(extra)
  ${SL_REFUND_AT}  if not removed then return nil end
  local newest = call('ZRANGE', key, -1, -1, 'WITHSCORES')
  if newest[2] then
    local ttl = tonumber(newest[2]) + window - now
    if ttl <= 0 then call('DEL', key) else call('PEXPIRE', key, string.format('%d', ttl + slack)) end
  end`,
)}${SL_LOOK}if not (${SL_FITS}) or ${peekOr(frame)}cost == 0 then return reply end
${slAdd((i) => `extra .. '.' .. ${i}`)}if newest < now then newest = now end
call('PEXPIRE', key, string.format('%d', newest + window - now + slack))
return reply
`

export const slidingLogLua: LuaFragments = { module: SLIDING_LOG, flat }
