import {
  consumeAnd,
  peekOr,
  refundBranch,
  type FlatSteps,
  type LuaFragments,
  type LuaFrame,
} from './lua'
import { fieldNames, fieldOf, replyTable, ringSize, slotOf } from './sliding-window.ring.lua'

/**
 * sliding-window's Lua, the state transitions of sliding-window.ts (count,
 * scaledEstimate for the admission test, resetAt for the TTL, apply, refund); the outcome is
 * core's decide on the state `look` returns. `s[0]` is the newest bucket, `s[1 + i]` the
 * counter of ring slot i (precision + 1 slots).
 *
 * Redis state: one hash, field `n` = newest bucket and fields `0`..`precision` = the non-zero
 * counters of the ring, expiring when the newest counted bucket has left the window.
 *
 * One source for both script families where they compute the same thing: the estimate of the
 * admission test, which bucket a refund may reach, and the expiry are fragments the generic
 * module below and the flat bodies below are built from. They read `newest`,
 * `now`, `size` (bucket ms), `ring` (precision + 1), `precision`, and a ring slot's count
 * through `countAt` (the generic module keeps the ring in a table, the flat script in the
 * hash's fields as read). Applying a request is written twice: the generic module changes the
 * table and saves it, the flat script writes only the fields that change.
 */

/**
 * Lua: floor(a / b) for integers (`a` a name, `b` a divisor of the window: exact), by
 * arithmetic: `math.floor` is a C call in Redis, 130 instructions a call.
 */
const idiv = (a: string, b: string): string => `(${a} - ${a} % ${b}) / ${b}`

/** A ring slot's count, as each script family holds it. */
type CountAt = (slot: string) => string

/**
 * `used`: floor(estimate) at now held at the newest bucket counted (core's usedAt): the buckets
 * counted in full, plus the floored share of the one counted in part.
 */
function swUsed(countAt: CountAt): string {
  return `local t = now
if newest * size > t then t = newest * size end
local current = ${idiv('t', 'size')}
local full, oldest = 0, 0
-- The window's buckets that the ring still holds: from the oldest (counted in part) on.
local from, to = current - precision, current
if to > newest then to = newest end
if from <= newest and from > newest - ring and from >= 0 then oldest = ${countAt('from % ring')} end
from = from + 1
if from <= newest - ring then from = newest - ring + 1 end
if from < 0 then from = 0 end
for j = from, to do full = full + ${countAt('j % ring')} end
local scaled = full * size + oldest * (size - (t - current * size))
local used = ${idiv('scaled', 'size')}
`
}

/** Whether a refund of a request admitted in `bucket` reaches it: it still counts and is held. */
const SW_REFUNDABLE =
  'bucket >= floor(now / size) - precision and bucket <= newest and bucket > newest - ring'

/**
 * The flat scripts' refund of a request admitted `extra` ms ago (`c`: the ring's counts by
 * slot): whether it `reaches` its bucket, that bucket's `slot` and the count `left` there after.
 */
const SW_REFUND_LEFT = `local bucket = floor((now - tonumber(extra)) / size)
local reaches = ${SW_REFUNDABLE}
local slot = bucket % ring
local left = (c[slot] or 0) - cost
`

/** `expires_at`: when the newest bucket that still holds a count leaves the window (0: none). */
function swExpiry(countAt: CountAt): string {
  return `local expires_at = 0
local bucket = newest
while bucket > newest - ring and bucket >= 0 do
  if ${countAt('bucket % ring')} > 0 then
    expires_at = (bucket + precision + 1) * size
    break
  end
  bucket = bucket - 1
end
`
}

/**
 * Applying a request, the part both families compute alike: the `bucket` it counts in (held at
 * the newest when the clock stepped back), its ring `slot`, and when it opens a new bucket,
 * `stale`, how many buckets after the newest one restart at zero, from `first` on.
 */
const SW_APPLY_BUCKET = `local bucket = ${idiv('now', 'size')}
if bucket < newest then bucket = newest end
local slot = bucket % ring
local stale = bucket - newest
local first = newest + 1
`

/** Whether ring slot `slot` belongs to a bucket that restarts at zero (see SW_APPLY_BUCKET). */
function swStale(slot: string): string {
  return `(stale >= ring or (${slot} - first) % ring < stale)`
}

/** The generic module's ring: slot i is s[1 + i]. */
const inTable: CountAt = (slot) => `s[1 + ${slot}]`

/** The locals the fragments read, from the generic module's state and policy. */
const LOCALS =
  'local newest, precision, size, ring = s[0], p.precision, p.window / p.precision, p.precision + 1'

const SLIDING_WINDOW = `
local sliding_window = {}
ALG.sw = sliding_window

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
function sliding_window.look(s, now, p, cost)
  ${LOCALS}
  ${swUsed(inTable)}
  local reply = { now, newest }
  for i = 1, p.precision + 1 do
    if s[i] > 0 then
      reply[#reply + 1] = i - 1
      reply[#reply + 1] = s[i]
    end
  end
  return cost <= p.limit and used + cost <= p.limit, reply
end

function sliding_window.apply(s, now, p, cost)
  ${LOCALS}
  ${SW_APPLY_BUCKET}
  if bucket > newest then
    for i = 0, precision do
      if ${swStale('i')} then s[1 + i] = 0 end
    end
    s[0] = bucket
  end
  s[1 + slot] = s[1 + slot] + cost
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
  local newest, precision = s[0], p.precision
  local bucket = floor(at / size)
  if not (${SW_REFUNDABLE}) then return end
  local slot = 1 + bucket % ring
  s[slot] = max(0, s[slot] - cost)
end

function sliding_window.penalize(s, now, p, cost)
  ${LOCALS}
  ${swUsed(inTable)}
  local add = min(cost, p.limit - used)
  if add > 0 then sliding_window.apply(s, now, p, add) end
end

function sliding_window.save(key, s, now, p)
  ${LOCALS}
  ${swExpiry(inTable)}
  if expires_at <= now then
    call('DEL', key)
    return
  end
  local set, gone = { 'n', int(s[0]) }, {}
  for i = 0, p.precision do
    if s[1 + i] > 0 then
      set[#set + 1] = int(i)
      set[#set + 1] = int(s[1 + i])
    else
      gone[#gone + 1] = int(i)
    end
  end
  if #gone > 0 then call_many('HDEL', key, gone) end
  call_many('HSET', key, set)
  call('PEXPIRE', key, int(expires_at - now + SLACK))
end
`

/** The flat script's ring: the hash's fields as read, by slot (a missing field counts 0). */
const inHash = (slot: string): string => `(c[${slot}] or 0)`

/**
 * The hash read (keys of their own): the ring's counts `c` by slot, the `newest` bucket, and
 * the reply: now, the newest bucket, then slot and counter of each non-zero counter, as
 * integers (no bulk strings for the client to parse). One pass; the texts read once per call
 * (text_int's memo, written out here: a Lua call per field cost more than its lookup).
 */
const keysRead = (frame: LuaFrame): string => {
  // The reply built in the same pass as the counts, unless the frame writes it (ringReply).
  const own = frame.ringReply === undefined
  return `${ringSize(frame.baked)}
local h = call('HGETALL', key)
local newest, c${own ? `, reply, r = 0, {}, ${replyTable(frame.baked)}, 2` : ' = 0, {}'}
for i = 1, #h, 2 do
  local text = h[i + 1]
  local value = text_ints[text]
  if value == nil then
    value = tonumber(text)
    text_ints[text] = value
  end
  if h[i] == 'n' then
    newest = value
  else
    local slot = ${slotOf(frame.baked, 'h[i]')}
    c[slot] = value
${own ? '    reply[r + 1], reply[r + 2] = slot, value\n    r = r + 2\n' : ''}  end
end
${own ? 'reply[2] = newest\n' : frame.ringReply}`
}

/** A timed refund on the hash (as sliding_window.refund then save). */
const keysRefund = (frame: LuaFrame): string => `${SW_REFUND_LEFT}if reaches then
  if left > 0 then
    c[slot] = left
    call('HSET', key, ${fieldOf(frame.baked, 'slot')}, int_text(left))
  elseif c[slot] then
    c[slot] = nil
    call('HDEL', key, ${fieldOf(frame.baked, 'slot')})
  end
end
-- save: the TTL ends with the newest bucket that still holds a count (resetAt).
${swExpiry(inHash)}if expires_at <= now then
  call('DEL', key)
else
  call('PEXPIRE', key, int_text(expires_at - now + slack))
end
`

/**
 * Applying a request to the hash: buckets after the newest one restart at zero (their slots
 * are the ones to clear); `keep` says whether the TTL set by every save since stands.
 */
const keysApply = (
  frame: LuaFrame,
  keep: (then: string) => string,
): string => `${SW_APPLY_BUCKET}if bucket > newest then
  -- The new bucket's own slot is one of them: it restarts at cost (HSET below).
  local gone = {}
  for s, _ in pairs(c) do
    if s ~= slot and ${swStale('s')} then gone[#gone + 1] = ${fieldOf(frame.baked, 's')} end
  end
  for i = 1, #gone, 1000 do call('HDEL', key, unpack(gone, i, math.min(i + 999, #gone))) end
  call('HSET', key, 'n', int_text(bucket), ${fieldOf(frame.baked, 'slot')}, int_text(cost))
else
  local had = c[slot] or 0
  local count = had + cost
  -- int_text's memo, written out (a Lua call per decision cost more than its lookup).
  local text = int_texts[count]
  if text == nil then text = int_text(count) end
  call('HSET', key, ${fieldOf(frame.baked, 'slot')}, text)
  -- The newest bucket already counted: every save since set the TTL to end with its window,
  -- at the same moment on the server's clock (with client time, the writer's clock moves it).
  ${keep('had > 0 and server')}
end
`
const PEXPIRE_BUCKET = `call('PEXPIRE', key, int_text((bucket + precision + 1) * size - now + slack))`

/**
 * The flat body on keys of their own, any precision: the
 * same hash, field `n` = newest bucket and fields `0`..`precision` = the non-zero counters of
 * the ring, and the same TTL (the end of the newest counted bucket's window), so either script
 * reads what the other wrote. A consume is TIME, GET (block), HGETALL, and when admitted one
 * HSET (plus one HDEL when buckets left the ring) and one PEXPIRE.
 *
 * The script only tests admission, with core's arithmetic (scaledEstimate): the reply is the
 * state as read, as integers: `now`, the newest bucket, then slot and counter of each non-zero
 * counter of the ring (what HGETALL read), from which the store computes the
 * outcome with core's own decide (@sluice/redis flat-outcome.ts). Refund (with a time) as
 * sliding_window.refund then save. Negative integer reply: the key's block.
 */
const keysFlat = (
  frame: LuaFrame,
): string => `${keysRead(frame)}${refundBranch(frame, keysRefund(frame))}local h = reply
if cost > limit or ${peekOr(frame)}cost == 0 then return h end
-- decide's admission test: floor(scaledEstimate / size) + cost <= limit, at now held at the
-- newest bucket already counted.
${swUsed(inHash)}if used + cost > limit then return h end
${keysApply(frame, (then) => `if ${then} then return h end`)}${PEXPIRE_BUCKET}
return h
`

/** The admission test of the steps: `fits` for a consume, decide's test as above. */
const stepsFits = (frame: LuaFrame): string => `local fits = false
if ${consumeAnd(frame)}cost > 0 and cost <= limit then
  ${swUsed(inHash)}  fits = used + cost <= limit
end
`

/** The steps on keys of their own (LuaFragments.steps): the flat body's parts. */
const keysSteps = (frame: LuaFrame): FlatSteps => ({
  read: keysRead(frame),
  refund: keysRefund(frame),
  look: stepsFits(frame),
  apply: `local keep = false
${keysApply(frame, (then) => `keep = ${then}`)}if not keep then
  ${PEXPIRE_BUCKET}
end
`,
})

/** The reply as on keys of their own: `now`, the newest bucket, each non-zero slot and count. */
const RING_REPLY = `local reply, r = { now, newest }, 2
for slot, value in pairs(c) do
  reply[r + 1], reply[r + 2] = slot, value
  r = r + 2
end
`

/** The ring read from its field (packed layout), and the reply (or the frame's ringReply). */
const packedRead = (frame: LuaFrame): string => `local size = window / precision
local ring = precision + 1
local newest, c = read_ring(key, field, now, ring)
${frame.ringReply ?? RING_REPLY}`

const PACKED_REFUND = `${SW_REFUND_LEFT}if reaches then
  if left > 0 then c[slot] = left else c[slot] = nil end
end
${swExpiry(inHash)}save_ring(key, field, newest, c, ring, expires_at, now, slack)
`

const PACKED_APPLY = `${SW_APPLY_BUCKET}if bucket > newest then
  -- The new bucket's own slot is one of the stale ones: it restarts at cost.
  for s, _ in pairs(c) do
    if ${swStale('s')} then c[s] = nil end
  end
  newest = bucket
end
c[slot] = (c[slot] or 0) + cost
save_ring(key, field, newest, c, ring, (bucket + precision + 1) * size, now, slack)
`

/**
 * The flat body on the packed layout (@sluice/redis lua/packed.ts): the ring is core's state vector in one
 * field, `<expires at>;<newest>,<count of slot 0>,...`, read whole (read_ring), changed here as
 * the hash is above, and written whole (save_ring) with the expiry the hash's TTL would have.
 * Same reply and same transitions as the script above.
 */
const packedFlat = (
  frame: LuaFrame,
): string => `${packedRead(frame)}${refundBranch(frame, PACKED_REFUND)}if cost > limit or ${peekOr(frame)}cost == 0 then return reply end
${swUsed(inHash)}if used + cost > limit then return reply end
${PACKED_APPLY}return reply
`

const packedSteps = (frame: LuaFrame): FlatSteps => ({
  read: packedRead(frame),
  refund: PACKED_REFUND,
  look: stepsFits(frame),
  apply: PACKED_APPLY,
})

export const slidingWindowLua: LuaFragments = {
  module: SLIDING_WINDOW,
  flatSetup: (frame) => (frame.layout === 'keys' ? fieldNames(frame.baked) : ''),
  flat: (frame) => (frame.layout === 'keys' ? keysFlat(frame) : packedFlat(frame)),
  steps: (frame) => (frame.layout === 'keys' ? keysSteps(frame) : packedSteps(frame)),
}
