/**
 * sliding-window, the state transitions of core's algorithms/sliding-window.ts (count,
 * scaledEstimate for the admission test, resetAt for the TTL, apply, refund); the outcome is
 * core's decide on the state `look` returns. `s[0]` is the newest bucket, `s[1 + i]` the
 * counter of ring slot i (precision + 1 slots).
 *
 * Redis state: one hash, field `n` = newest bucket and fields `0`..`precision` = the non-zero
 * counters of the ring, expiring when the newest counted bucket has left the window.
 */
export const SLIDING_WINDOW = `
local sliding_window = {}
ALG.sw = sliding_window

local function sw_count(s, p, bucket)
  local newest = s[0]
  local ring = p.precision + 1
  if bucket > newest or bucket <= newest - ring or bucket < 0 then return 0 end
  return s[1 + bucket % ring]
end

local function sw_scaled_estimate(s, p, now)
  local size = p.window / p.precision
  local bucket = floor(now / size)
  local full = 0
  for j = bucket - p.precision + 1, bucket do full = full + sw_count(s, p, j) end
  local oldest = sw_count(s, p, bucket - p.precision)
  return full * size + oldest * (size - (now - bucket * size))
end

local function sw_newest_counted(s, p)
  local ring = p.precision + 1
  local bucket = s[0]
  while bucket > s[0] - ring and bucket >= 0 do
    if s[1 + bucket % ring] > 0 then return bucket end
    bucket = bucket - 1
  end
  return -1
end

local function sw_reset_at(s, p)
  local bucket = sw_newest_counted(s, p)
  if bucket < 0 then return 0 end
  return (bucket + p.precision + 1) * (p.window / p.precision)
end

function sliding_window.load(key, p)
  local s = { [0] = 0 }
  for i = 1, p.precision + 1 do s[i] = 0 end
  local h = call('HGETALL', key)
  for i = 1, #h, 2 do
    if h[i] == 'n' then s[0] = tonumber(h[i + 1]) else s[1 + tonumber(h[i])] = tonumber(h[i + 1]) end
  end
  return s
end

-- Admission at now held at the newest bucket counted; the reply is the state as read (now,
-- the newest bucket, then slot and counter of each non-zero counter), as the flat script's.
function sliding_window.look(s, raw_now, p, cost)
  local size = p.window / p.precision
  local now = max(raw_now, s[0] * size)
  local used = floor(sw_scaled_estimate(s, p, now) / size)
  local reply = { raw_now, s[0] }
  for i = 1, p.precision + 1 do
    if s[i] > 0 then
      reply[#reply + 1] = i - 1
      reply[#reply + 1] = s[i]
    end
  end
  return cost <= p.limit and used + cost <= p.limit, reply
end

function sliding_window.apply(s, raw_now, p, cost)
  local size = p.window / p.precision
  local ring = p.precision + 1
  local bucket = max(floor(raw_now / size), s[0])
  if bucket > s[0] then
    local stale = min(bucket - s[0], ring)
    for j = bucket - stale + 1, bucket do s[1 + j % ring] = 0 end
    s[0] = bucket
  end
  s[1 + bucket % ring] = s[1 + bucket % ring] + cost
end

function sliding_window.refund(s, now, p, cost, at)
  local size = p.window / p.precision
  local ring = p.precision + 1
  if at == nil then
    -- A reward: from the newest bucket that still counts backwards, never below zero.
    local oldest = max(floor(now / size) - p.precision, s[0] - ring + 1, 0)
    local left = cost
    local bucket = s[0]
    while bucket >= oldest and left > 0 do
      local slot = 1 + bucket % ring
      local taken = min(left, s[slot])
      s[slot] = s[slot] - taken
      left = left - taken
      bucket = bucket - 1
    end
    return
  end
  local bucket = floor(at / size)
  local oldest_counted = floor(now / size) - p.precision
  if bucket < oldest_counted or bucket > s[0] or bucket <= s[0] - ring then return end
  local slot = 1 + bucket % ring
  s[slot] = max(0, s[slot] - cost)
end

function sliding_window.penalize(s, raw_now, p, cost)
  local size = p.window / p.precision
  local now = max(raw_now, s[0] * size)
  local used = floor(sw_scaled_estimate(s, p, now) / size)
  local add = min(cost, p.limit - used)
  if add > 0 then sliding_window.apply(s, raw_now, p, add) end
end

function sliding_window.save(key, s, now, p)
  local expires_at = sw_reset_at(s, p)
  if expires_at <= now then
    call('DEL', key)
    return
  end
  local set, gone = { 'n', int(s[0]) }, {}
  for i = 0, p.precision do
    if s[1 + i] > 0 then
      set[#set + 1] = tostring(i)
      set[#set + 1] = int(s[1 + i])
    else
      gone[#gone + 1] = tostring(i)
    end
  end
  if #gone > 0 then call_many('HDEL', key, gone) end
  call_many('HSET', key, set)
  call('PEXPIRE', key, int(expires_at - now + SLACK))
end
`
