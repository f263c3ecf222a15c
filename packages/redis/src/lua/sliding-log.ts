/**
 * sliding-log, mirroring core's algorithms/sliding-log.ts on a sorted set instead of an
 * array: one member per admitted cost unit, scored by its timestamp. Members are
 * `<request id>.<n>` (the request id is unique per request, n counts within the call), so
 * requests at the same ms are never collapsed into one member. A timestamp is live while it
 * is inside (now - window, now]. The key expires when its newest timestamp leaves the window.
 *
 * Unlike the other algorithms the state is not loaded into a vector: `load` returns the key
 * and every step reads the sorted set, so a call costs O(log n) whatever the limit.
 */
export const SLIDING_LOG = `
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

-- Admission, and the flat script's reply: { live, newest - now, mustExpire - now }, what core's
-- decide reads of the log (0 where it reads nothing).
function sliding_log.look(key, now, p, cost)
  local after = '(' .. int(now - p.window)
  local live = call('ZCOUNT', key, after, '+inf')
  local newest = now
  if live > 0 then newest = sl_newest(key) end
  local must = now
  if cost <= p.limit and live + cost > p.limit then
    must = tonumber(call('ZRANGEBYSCORE', key, after, '+inf', 'WITHSCORES', 'LIMIT', live + cost - p.limit - 1, 1)[2])
  end
  return cost <= p.limit and live + cost <= p.limit, { live, newest - now, must - now }
end

function sliding_log.apply(key, now, p, cost)
  call('ZREMRANGEBYSCORE', key, '-inf', int(now - p.window))
  local args, at = {}, int(now)
  for i = 1, cost do
    SEQ = SEQ + 1
    args[#args + 1] = at
    args[#args + 1] = REQUEST .. '.' .. SEQ
  end
  call_many('ZADD', key, args)
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
  if at <= now - p.window then return end
  local gone = call('ZRANGEBYSCORE', key, int(at), int(at), 'LIMIT', 0, cost)
  if #gone == 0 then return end
  call_many('ZREM', key, gone)
  sl_expire(key, now, p)
end

function sliding_log.penalize(key, now, p, cost)
  local live = call('ZCOUNT', key, '(' .. int(now - p.window), '+inf')
  local add = min(cost, p.limit - live)
  if add > 0 then sliding_log.apply(key, now, p, add) end
end

function sliding_log.save()
end
`
