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

function sliding_log.decide(key, now, p, cost, o)
  local after = '(' .. int(now - p.window)
  local live = call('ZCOUNT', key, after, '+inf')
  local newest = 0
  if live > 0 then newest = sl_newest(key) end
  if cost > p.limit then
    local reset = 0
    if live > 0 then reset = newest + p.window - now end
    return reject_forever(o, p.limit - live, reset)
  end
  o[5] = 0
  if live + cost <= p.limit then
    o[1] = 1
    o[2] = p.limit - live - cost
    o[4] = 0
    if cost > 0 then
      o[3] = p.window
    elseif live > 0 then
      o[3] = newest + p.window - now
    else
      o[3] = 0
    end
  else
    o[1] = 0
    o[2] = max(0, p.limit - live)
    -- The request fits once the (live + cost - limit) oldest live timestamps have left.
    local must = call('ZRANGEBYSCORE', key, after, '+inf', 'WITHSCORES', 'LIMIT', live + cost - p.limit - 1, 1)
    o[4] = tonumber(must[2]) + p.window - now
    o[3] = newest + p.window - now
  end
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
