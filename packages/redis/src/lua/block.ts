/**
 * `store.block`: the key's block, kept apart from its counters so that no consume overwrites
 * it. The value is the time it ends (ms, on the scripts' clock), and the item expires then, so
 * a lifted block costs nothing. The other scripts GET it before anything else (driver.ts,
 * flat.ts).
 *
 * KEYS[1]  `<prefix>:{<escaped key>}:b`
 * ARGV[1]  now in ms, or '' to read Redis TIME (time: 'server')
 * ARGV[2]  how long the block holds from now (ms): the limiter's until - now; <= 0 lifts it
 * ARGV[3]  ms added to the TTL (time: 'client' clock tolerance; 0 with server time)
 *
 * A later block replaces an earlier one (SET), whichever ends first.
 */
export const BLOCK = `
local now = tonumber(ARGV[1])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local span = tonumber(ARGV[2])
if span <= 0 then
  redis.call('DEL', KEYS[1])
  return nil
end
redis.call('SET', KEYS[1], string.format('%d', now + span), 'PX', string.format('%d', span + tonumber(ARGV[3])))
return nil
`
