/**
 * sliding-window, the state transitions of core's algorithms/sliding-window.ts (count,
 * scaledEstimate for the admission test, resetAt for the TTL, apply, refund); the outcome is
 * core's decide on the state `look` returns. `s[0]` is the newest bucket, `s[1 + i]` the
 * counter of ring slot i (precision + 1 slots).
 *
 * Redis state: one hash, field `n` = newest bucket and fields `0`..`precision` = the non-zero
 * counters of the ring, expiring when the newest counted bucket has left the window.
 *
 * One source for both script families where they compute the same thing: the estimate of the
 * admission test, which bucket a refund may reach, and the expiry are fragments the generic
 * module below and the flat script (flat/windows.ts) are built from. They read `newest`,
 * `now`, `size` (bucket ms), `ring` (precision + 1), `precision`, and a ring slot's count
 * through `countAt` (the generic module keeps the ring in a table, the flat script in the
 * hash's fields as read). Applying a request is written twice: the generic module changes the
 * table and saves it, the flat script writes only the fields that change.
 */

/** A ring slot's count, as each script family holds it. */
type CountAt = (slot: string) => string

/**
 * `used`: floor(estimate) at now held at the newest bucket counted (core's usedAt): the buckets
 * counted in full, plus the floored share of the one counted in part.
 */
export function swUsed(countAt: CountAt): string {
  return `local t = now
if newest * size > t then t = newest * size end
local current = floor(t / size)
local full, oldest = 0, 0
for j = current - precision, current do
  if j <= newest and j > newest - ring and j >= 0 then
    if j == current - precision then oldest = ${countAt('j % ring')} else full = full + ${countAt('j % ring')} end
  end
end
local used = floor((full * size + oldest * (size - (t - current * size))) / size)
`
}

/** Whether a refund of a request admitted in `bucket` reaches it: it still counts and is held. */
export const SW_REFUNDABLE =
  'bucket >= floor(now / size) - precision and bucket <= newest and bucket > newest - ring'

/**
 * The flat scripts' refund of a request admitted `extra` ms ago (`c`: the ring's counts by
 * slot): whether it `reaches` its bucket, that bucket's `slot` and the count `left` there after.
 */
export const SW_REFUND_LEFT = `local bucket = floor((now - tonumber(extra)) / size)
local reaches = ${SW_REFUNDABLE}
local slot = bucket % ring
local left = (c[slot] or 0) - cost
`

/** `expires_at`: when the newest bucket that still holds a count leaves the window (0: none). */
export function swExpiry(countAt: CountAt): string {
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
export const SW_APPLY_BUCKET = `local bucket = floor(now / size)
if bucket < newest then bucket = newest end
local slot = bucket % ring
local stale = bucket - newest
local first = newest + 1
`

/** Whether ring slot `slot` belongs to a bucket that restarts at zero (see SW_APPLY_BUCKET). */
export function swStale(slot: string): string {
  return `(stale >= ring or (${slot} - first) % ring < stale)`
}

/** The generic module's ring: slot i is s[1 + i]. */
const inTable: CountAt = (slot) => `s[1 + ${slot}]`

/** The locals the fragments read, from the generic module's state and policy. */
const LOCALS =
  'local newest, precision, size, ring = s[0], p.precision, p.window / p.precision, p.precision + 1'

export const SLIDING_WINDOW = `
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
