/**
 * Owns the flat scripts of the windows (fixed-window, sliding-window, sliding-log).
 */
import type { WindowAnchor } from '@sluice/core'
import { FK_CURRENT, FK_HELD_AT, FW_CURRENT, FW_FITS, FW_HELD_AT, FW_REPLY } from '../fixed-window'
import { slAdd, SL_FITS, SL_LOOK, SL_REFUND_AT } from '../sliding-log'
import { SW_APPLY_BUCKET, SW_REFUND_LEFT, swExpiry, swStale, swUsed } from '../sliding-window'
import { tail, prologue, head, save, type BakedPolicy } from './frame'

/**
 * On Redis's clock an admitted fixed-window request replies when it was counted (StoreResult.at);
 * a batch says it once, after every reply (see tail in frame.ts).
 */
const ADMITTED_AT = 'if server then return { reply, now } end\n'

/**
 * fixed-window: sa = count, sb = window start. `anchor` 'first-request' (code `fk`): each key's
 * window starts at its first request (core's first-request-window.ts), else at the clock's
 * multiples of the window.
 */
export const fixedWindowFlat = (
  baked?: BakedPolicy,
  batch = false,
  anchor: WindowAnchor = 'clock',
  packed = false,
): string => {
  const perKey = anchor === 'first-request'
  const code = perKey ? 'fk' : 'fw'
  return `${head(code, baked, batch, packed)}
if op == 'r' then
  local at = now - tonumber(extra)
  local count = sa
  if ${perKey ? FK_HELD_AT : FW_HELD_AT} then
    count = sa - cost
    if count < 0 then count = 0 end
  end
  local expires_at = 0
  if count > 0 then expires_at = sb + window end
  ${save('count', 'sb', 'expires_at', packed)}
  return nil
end
${perKey ? FK_CURRENT : FW_CURRENT}-- The store computes the outcome from the reply with core's decide (flat-outcome.ts).
local reply = ${FW_REPLY}
if not (${FW_FITS}) or op == 'p' or cost == 0 then return reply end
count = count + cost
${save('count', 'window_start', 'window_start + window', packed)}
${batch ? '' : ADMITTED_AT}return reply
${tail(code, batch, packed)}`
}

/**
 * sliding-window, any precision (sliding-window.ts in core, lua/sliding-window.ts here): the
 * same hash, field `n` = newest bucket and fields `0`..`precision` = the non-zero counters of
 * the ring, and the same TTL (the end of the newest counted bucket's window), so either script
 * reads what the other wrote. A consume is TIME, GET (block), HGETALL, and when admitted one
 * HSET (plus one HDEL when buckets left the ring) and one PEXPIRE.
 *
 * The script only tests admission, with core's arithmetic (scaledEstimate): the reply is the
 * state as read, as integers: `now`, the newest bucket, then slot and counter of each non-zero
 * counter of the ring (what HGETALL read), from which the store computes the
 * outcome with core's own decide (flat-outcome.ts). Refund (with a time) as
 * sliding_window.refund then save. Negative integer reply: the key's block.
 */
/** The flat script's ring: the hash's fields as read, by slot (a missing field counts 0). */
const inHash = (slot: string): string => `(c[${slot}] or 0)`

/**
 * A ring slot's field name: with the precision baked in (and small), from a table the script
 * builds once per call (a batch's decisions share it), else formatted where it is needed.
 */
const FIELD_TABLE_MAX = 30
const fieldNames = (baked?: BakedPolicy): string =>
  baked !== undefined && baked.precision <= FIELD_TABLE_MAX
    ? `local FIELD = { ${Array.from({ length: baked.precision + 1 }, (_, i) => `[${i}] = '${i}'`).join(', ')} }\n`
    : ''
const fieldOf = (baked: BakedPolicy | undefined, slot: string): string =>
  baked !== undefined && baked.precision <= FIELD_TABLE_MAX
    ? `FIELD[${slot}]`
    : `string.format('%d', ${slot})`

export const slidingWindowFlat = (
  baked?: BakedPolicy,
  batch = false,
): string => `${fieldNames(baked)}${prologue('sw', baked, batch)}local size = window / precision
local ring = precision + 1
local h = call('HGETALL', key)
-- The state as read, and the reply: now, the newest bucket, then slot and counter of each
-- non-zero counter, as integers (no bulk strings for the client to parse). One pass.
local newest, c, reply, r = 0, {}, { now, 0 }, 2
for i = 1, #h, 2 do
  local value = tonumber(h[i + 1])
  if h[i] == 'n' then
    newest = value
  else
    local slot = tonumber(h[i])
    c[slot] = value
    reply[r + 1], reply[r + 2] = slot, value
    r = r + 2
  end
end
reply[2] = newest
if op == 'r' then
  ${SW_REFUND_LEFT}  if reaches then
    if left > 0 then
      c[slot] = left
      call('HSET', key, ${fieldOf(baked, 'slot')}, string.format('%d', left))
    elseif c[slot] then
      c[slot] = nil
      call('HDEL', key, ${fieldOf(baked, 'slot')})
    end
  end
  -- save: the TTL ends with the newest bucket that still holds a count (resetAt).
  ${swExpiry(inHash)}  if expires_at <= now then
    call('DEL', key)
  else
    call('PEXPIRE', key, string.format('%d', expires_at - now + slack))
  end
  return nil
end
local h = reply
if cost > limit or op == 'p' or cost == 0 then return h end
-- decide's admission test: floor(scaledEstimate / size) + cost <= limit, at now held at the
-- newest bucket already counted.
${swUsed(inHash)}if used + cost > limit then return h end
-- apply: buckets after the newest one restart at zero (their slots are the ones to clear).
${SW_APPLY_BUCKET}if bucket > newest then
  -- The new bucket's own slot is one of them: it restarts at cost (HSET below).
  local gone = {}
  for s, _ in pairs(c) do
    if s ~= slot and ${swStale('s')} then gone[#gone + 1] = ${fieldOf(baked, 's')} end
  end
  for i = 1, #gone, 1000 do call('HDEL', key, unpack(gone, i, math.min(i + 999, #gone))) end
  call('HSET', key, 'n', string.format('%d', bucket), ${fieldOf(baked, 'slot')}, string.format('%d', cost))
else
  call('HSET', key, ${fieldOf(baked, 'slot')}, string.format('%d', (c[slot] or 0) + cost))
  -- The newest bucket already counted: every save since set the TTL to end with its window,
  -- at the same moment on the server's clock (with client time, the writer's clock moves it).
  if (c[slot] or 0) > 0 and server then return h end
end
call('PEXPIRE', key, string.format('%d', (bucket + precision + 1) * size - now + slack))
return h
${tail('sw', batch)}`

/**
 * sliding-window on the packed layout (lua/packed.ts): the ring is core's state vector in one
 * field, `<expires at>;<newest>,<count of slot 0>,...`, read whole (read_ring), changed here as
 * the hash is above, and written whole (save_ring) with the expiry the hash's TTL would have.
 * Same reply and same transitions as the script above.
 */
export const slidingWindowPackedFlat = (
  baked?: BakedPolicy,
  batch = false,
): string => `${prologue('sw', baked, batch, true)}local size = window / precision
local ring = precision + 1
local newest, c = read_ring(key, field, now, ring)
local reply, r = { now, newest }, 2
for slot, value in pairs(c) do
  reply[r + 1], reply[r + 2] = slot, value
  r = r + 2
end
if op == 'r' then
  ${SW_REFUND_LEFT}  if reaches then
    if left > 0 then c[slot] = left else c[slot] = nil end
  end
  ${swExpiry(inHash)}  save_ring(key, field, newest, c, ring, expires_at, now, slack)
  return nil
end
if cost > limit or op == 'p' or cost == 0 then return reply end
${swUsed(inHash)}if used + cost > limit then return reply end
${SW_APPLY_BUCKET}if bucket > newest then
  -- The new bucket's own slot is one of the stale ones: it restarts at cost.
  for s, _ in pairs(c) do
    if ${swStale('s')} then c[s] = nil end
  end
  newest = bucket
end
c[slot] = (c[slot] or 0) + cost
save_ring(key, field, newest, c, ring, (bucket + precision + 1) * size, now, slack)
return reply
${tail('sw', batch, true)}`

/**
 * sliding-log (sliding-log.ts in core, lua/sliding-log.ts here): the same sorted set, one
 * member `<request id>.<n>` per admitted cost unit scored by its timestamp, and the same TTL
 * (the newest timestamp's end of window). A consume is TIME, GET (block), ZCOUNT, ZRANGE (the
 * newest, when any is live), ZRANGEBYSCORE (rejections only), and when admitted
 * ZREMRANGEBYSCORE, ZADD and PEXPIRE: after the ZADD the newest score is max(newest, now), so
 * it is not read again.
 *
 * The reply is `{ live, newest - now, mustExpire - now, now }` (0 where decide does not read it):
 * everything core's decide reads of the log, from which the store computes the outcome with
 * core's own decide (flat-outcome.ts). Refund (with a time) as sliding_log.refund. Negative
 * integer reply: the key's block.
 */
export const slidingLogFlat = (
  baked?: BakedPolicy,
  batch = false,
): string => `${prologue('sl', baked, batch)}
if op == 'r' then
  local at = now - tonumber(extra)
  ${SL_REFUND_AT}  if not removed then return nil end
  local newest = call('ZRANGE', key, -1, -1, 'WITHSCORES')
  if newest[2] then
    local ttl = tonumber(newest[2]) + window - now
    if ttl <= 0 then call('DEL', key) else call('PEXPIRE', key, string.format('%d', ttl + slack)) end
  end
  return nil
end
${SL_LOOK}if not (${SL_FITS}) or op == 'p' or cost == 0 then return reply end
${slAdd((i) => `extra .. '.' .. ${i}`)}if newest < now then newest = now end
call('PEXPIRE', key, string.format('%d', newest + window - now + slack))
return reply
${tail('sl', batch)}`
