/**
 * Flat scripts for the common case: one policy of a string-state algorithm (gcra,
 * fixed-window, token-bucket, leaky-bucket). Same KEYS/ARGV contract as the driver (see
 * driver.ts) with exactly one policy and the
 * operations 'c', 'p' and 'r' with a time (rewards and penalties go to the generic scripts), and the same state transitions, line for line, as the
 * generic scripts (meter.ts, gcra.ts, token-bucket.ts, fixed-window.ts, prelude.ts), but
 * inlined: no function is defined and no table built per call, and a call is at most TIME,
 * two GETs (the block, the state) and one SET PX (or DEL).
 *
 * The reply is one integer (refund: nil; negative: the key is blocked for -reply ms) from which the store computes the five outcome
 * fields with core's own formulas (flat-outcome.ts): the backlog for the meter algorithms,
 * `count * (windowMs + 1) + msToNextWindow` for fixed-window. Every such value is an integer
 * below 2^53 (core caps limit x window at 2^50), so it crosses RESP exactly.
 *
 * State encoding (encode_pair/decode_pair in prelude.ts): the pair (a, b) is `a + 1` then `b`
 * in 13 digits when 0 <= b < 1e13, otherwise `a:b`.
 */

/** Reads `now`, checks the algorithm code, GETs the state and decodes it into `sa`, `sb`. */
function head(code: string): string {
  return `
local floor, ceil, tonumber = math.floor, math.ceil, tonumber
local call = redis.call
if ARGV[7] ~= '${code}' then return redis.error_reply('ERR sluice: algorithm ' .. tostring(ARGV[7]) .. ' is not in this script') end
local key, op = KEYS[1], ARGV[1]
local now = tonumber(ARGV[2])
if not now then
  local t = call('TIME')
  now = tonumber(t[1]) * 1000 + floor(tonumber(t[2]) / 1000)
end
local cost = tonumber(ARGV[3])
local limit, window, burst = tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10])
if op ~= 'r' then
  -- The key's block (see driver.ts): while it holds the reply is -(ms until it ends).
  local blocked = redis.pcall('GET', string.sub(key, 1, string.find(key, '}:', 1, true) + 1) .. 'b')
  if type(blocked) == 'string' then
    local wait = tonumber(blocked) - now
    if wait > 0 then return -wait end
  end
end
local v = call('GET', key)
local sa, sb = 0, 0
if v then
  local sep = string.find(v, ':', 1, true)
  if sep then
    sa, sb = tonumber(string.sub(v, 1, sep - 1)), tonumber(string.sub(v, sep + 1))
  else
    sa, sb = tonumber(string.sub(v, 1, -14)) - 1, tonumber(string.sub(v, -13))
  end
end
`
}

/** Writes the pair (a, b) expiring at `expires_at` (save_pair in prelude.ts). */
function save(a: string, b: string, expiresAt: string): string {
  return `
if ${expiresAt} <= now then
  call('DEL', key)
elseif ${b} >= 0 and ${b} < 1e13 then
  call('SET', key, string.format('%d%013d', ${a} + 1, ${b}), 'PX', string.format('%d', ${expiresAt} - now + tonumber(ARGV[5])))
else
  call('SET', key, string.format('%d:%d', ${a}, ${b}), 'PX', string.format('%d', ${expiresAt} - now + tonumber(ARGV[5])))
end
`
}

/**
 * The admission test of decide_meter (meter.ts) on `backlog`, with reservations (ARGV[6],
 * maxDelayMs) as there. The reply is `backlog` alone: every field of the outcome is a function
 * of it, the policy, the cost and maxDelayMs, which the store computes with core's formulas
 * (flat-outcome.ts). Peek, a rejection and a cost-0 consume return here; an admitted consume
 * falls through with `need` set.
 */
function meterTest(shaping: boolean): string {
  return `
local need = cost * window
if cost > burst or op == 'p' or cost == 0 then return backlog end
local maxd = tonumber(ARGV[6])
if maxd > 0 then
  ${shaping ? 'if backlog > maxd * limit then return backlog end' : 'if backlog + need - burst * window > maxd * limit then return backlog end'}
elseif backlog + need > burst * window then
  return backlog
end
`
}

export const GCRA_FLAT = `${head('gc')}
-- sa = tat remainder, sb = tat (ms)
local backlog = (sb - now) * limit + sa
if backlog < 0 then backlog = 0 end
if op == 'r' then
  local after = backlog - cost * window
  local tat, rem = 0, 0
  if after > 0 then
    tat = now + floor(after / limit)
    rem = after % limit
  end
  local expires_at = 0
  if tat > 0 then
    expires_at = tat
    if rem > 0 then expires_at = tat + 1 end
  end
  ${save('rem', 'tat', 'expires_at')}
  return nil
end
${meterTest(false)}
local after = backlog + need
local tat, rem = now + floor(after / limit), after % limit
local expires_at = tat
if rem > 0 then expires_at = tat + 1 end
${save('rem', 'tat', 'expires_at')}
return backlog
`

/** token-bucket and leaky-bucket (shaping): sa = level (missing x windowMs), sb = last refill. */
export function bucketFlat(code: 'tb' | 'lb'): string {
  return `${head(code)}
local level = sa
if now > sb then
  level = sa - (now - sb) * limit
  if level < 0 then level = 0 end
end
local last = sb
if now > last then last = now end
if op == 'r' then
  level = level - cost * window
  if level < 0 then level = 0 end
  local expires_at = 0
  if level > 0 then expires_at = last + ceil(level / limit) end
  ${save('level', 'last', 'expires_at')}
  return nil
end
local backlog = level
${meterTest(code === 'lb')}
level = backlog + need
local expires_at = 0
if level > 0 then expires_at = last + ceil(level / limit) end
${save('level', 'last', 'expires_at')}
return backlog
`
}

/** fixed-window: sa = count, sb = window start. */
export const FIXED_WINDOW_FLAT = `${head('fw')}
if op == 'r' then
  local at = now - tonumber(ARGV[4])
  local count = sa
  if sb == at - at % window then
    count = sa - cost
    if count < 0 then count = 0 end
  end
  local expires_at = 0
  if count > 0 then expires_at = sb + window end
  ${save('count', 'sb', 'expires_at')}
  return nil
end
local window_start = now - now % window
local count = 0
if sb == window_start then count = sa end
-- The reply packs the count before this request and the ms to the next window (1..window):
-- the store computes the outcome from them with core's formulas (decideFixedWindow).
local reply = count * (window + 1) + window_start + window - now
if cost > limit or count + cost > limit or op == 'p' or cost == 0 then return reply end
count = count + cost
${save('count', 'window_start', 'window_start + window')}
return reply
`
