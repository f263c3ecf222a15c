/**
 * The part of every script that reads the arguments and runs the algorithms: all policies of
 * one key are decided in one call, and only when every one admits the request is it applied
 * to any of them (all-or-nothing; a rejected request writes nothing).
 *
 * KEYS[i]   state of policy i: `<prefix>:{<escaped key>}:<policy id>` (one hash slot)
 * ARGV[1]   'c' consume | 'p' peek | 'r' refund
 * ARGV[2]   now in ms, or '' to read Redis TIME (time: 'server')
 * ARGV[3]   cost: a positive integer (peek: 0 or more)
 * ARGV[4]   consume: a request id unique per request (sliding-log members); refund: how many
 *           ms before now the refunded request was admitted
 * ARGV[5]   ms added to every TTL (time: 'client' clock tolerance; 0 with server time)
 * ARGV[6..] five per policy: algorithm code (fw sw sl tb lb gc), limit, windowMs, burst, precision
 *
 * Returns (consume, peek) five integers per policy: allowed (1/0), remaining, resetMs,
 * retryAfterMs (-1: never, the cost exceeds the capacity), delayMs. Refund returns nothing.
 */
export const DRIVER = `
local op = ARGV[1]
local now = tonumber(ARGV[2])
if not now then
  -- Allowed before writes because Redis >= 5 replicates a script's effects, not the script
  -- (redis.replicate_commands() would cost 1.5 us a call for nothing there).
  local t = call('TIME')
  now = tonumber(t[1]) * 1000 + floor(tonumber(t[2]) / 1000)
end
local cost = tonumber(ARGV[3])
SLACK = tonumber(ARGV[5])

local n = #KEYS
local policies, states, loaded = {}, {}, {}
for i = 1, n do
  local j = 5 + (i - 1) * 5
  local alg = ALG[ARGV[j + 1]]
  if not alg then return redis.error_reply('ERR sluice: algorithm ' .. ARGV[j + 1] .. ' is not in this script') end
  policies[i] = {
    alg = alg,
    limit = tonumber(ARGV[j + 2]),
    window = tonumber(ARGV[j + 3]),
    burst = tonumber(ARGV[j + 4]),
    precision = tonumber(ARGV[j + 5]),
  }
  -- Two policies with the same id share one key and one state, as they do in MemoryStore.
  local key = KEYS[i]
  if loaded[key] == nil then loaded[key] = alg.load(key, policies[i]) end
  states[i] = loaded[key]
end

if op == 'r' then
  local at = now - tonumber(ARGV[4])
  for i = 1, n do
    local p = policies[i]
    p.alg.refund(states[i], now, p, cost, at)
    p.alg.save(KEYS[i], states[i], now, p)
  end
  return nil
end

local out, admitted = {}, true
for i = 1, n do
  local o = { 0, 0, 0, 0, 0 }
  policies[i].alg.decide(states[i], now, policies[i], cost, o)
  if o[1] == 0 then admitted = false end
  for k = 1, 5 do out[#out + 1] = o[k] end
end

if op == 'c' and admitted and cost > 0 then
  REQUEST = ARGV[4]
  for i = 1, n do
    local p = policies[i]
    p.alg.apply(states[i], now, p, cost)
    p.alg.save(KEYS[i], states[i], now, p)
  end
end
return out
`
