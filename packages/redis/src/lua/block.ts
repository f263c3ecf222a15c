/**
 * `store.block`: the key's block, kept apart from its counters so that no consume overwrites
 * it. The value is the time it ends (ms, on the scripts' clock), and the item expires then, so
 * a lifted block costs nothing. The other scripts GET it before anything else (driver.ts,
 * flat/frame.ts).
 *
 * KEYS[1]  `<prefix>:{<escaped key>}:b`
 * ARGV[1]  now in ms, or '' to read Redis TIME (time: 'server')
 * ARGV[2]  how long the block holds from now (ms): the limiter's until - now; <= 0 lifts it
 * ARGV[3]  ms added to the TTL (time: 'client' clock tolerance; 0 with server time)
 * KEYS[2]  standalone Redis only: `<prefix>:blocks`, kept alive at least as long as this block,
 *          so batch scripts (flat/frame.ts) look for blocks only while it exists. A Cluster cannot
 *          touch it in the same script (another slot), and runs no batches.
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
local ttl = span + tonumber(ARGV[3])
redis.call('SET', KEYS[1], string.format('%d', now + span), 'PX', string.format('%d', ttl))
if KEYS[2] then
  local left = redis.call('PTTL', KEYS[2])
  if left ~= -1 and left < ttl then redis.call('SET', KEYS[2], '1', 'PX', string.format('%d', ttl)) end
end
return nil
`
