/**
 * Flat scripts for the common case: one policy. First those of the string-state algorithms
 * (gcra, fixed-window, token-bucket, leaky-bucket); sliding-window and sliding-log are at the
 * end, with their own replies (see there). Each comes in two forms: shared, with the driver's
 * KEYS/ARGV contract (see driver.ts) for exactly one policy, and per policy, with the policy
 * baked in as constants and a short ARGV (see `inputs`). Both do the operations 'c', 'p' and
 * 'r' with a time (rewards and penalties go to the generic scripts), with the same state
 * transitions, line for line, as the generic scripts (meter.ts, gcra.ts, token-bucket.ts,
 * fixed-window.ts, prelude.ts), but inlined: no function is defined and no table built per
 * call, and a call of the string-state ones is at most TIME, two GETs (the block, the state)
 * and one SET PX (or DEL).
 *
 * The reply is one integer (refund: nil; negative: the key is blocked for -reply ms) from which the store computes the five outcome
 * fields with core's own formulas (flat-outcome.ts): the backlog for the meter algorithms,
 * `count * (windowMs + 1) + msToNextWindow` for fixed-window. Every such value is an integer
 * below 2^53 (core caps limit x window at 2^50), so it crosses RESP exactly.
 *
 * State encoding (encode_pair/decode_pair in prelude.ts): the pair (a, b) is `a + 1` then `b`
 * in 13 digits when 0 <= b < 1e13, otherwise `a:b`.
 */

/**
 * A policy baked into a flat script as Lua constants (RedisStore's per-policy scripts): ARGV
 * then carries only what changes from call to call, and usually nothing at all.
 */
export interface BakedPolicy {
  readonly limit: number
  readonly windowMs: number
  readonly burst: number
  readonly precision: number
  /** ms added to every TTL (clockToleranceMs with client time, 0 with server time). */
  readonly slackMs: number
}

/**
 * The inputs as locals. Shared script (no `baked`): the driver's ARGV (see driver.ts), the
 * algorithm code checked. Per-policy script: the policy as constants and a short ARGV, every
 * entry optional so the store sends only up to the last one that is not the default:
 *
 * ARGV[1]  extra: sliding-log request id (consume), ms ago (refund); default ''
 * ARGV[2]  op: 'c' | 'p' | 'r'; default 'c'
 * ARGV[3]  now in ms; default (or '') Redis TIME
 * ARGV[4]  cost; default 1
 * ARGV[5]  maxDelayMs; default 0
 *
 * Batch script (per policy, `batch`): consumes only, one key per decision in KEYS, decided one
 * after another in that order (see `tail`), each as the per-policy script would alone:
 *
 * ARGV[1]      sliding-log: the batch's request id (decision i uses `<id>/<i>`); else ''
 * ARGV[2]      now in ms, for every decision of the batch; '' for Redis TIME
 * ARGV[2 + i]  cost of decision i; all absent when every cost is 1
 */
function inputs(code: string, baked: BakedPolicy | undefined, batch: boolean): string {
  if (baked === undefined) {
    if (batch) throw new Error('a batch script needs a baked policy')
    return `
if ARGV[7] ~= '${code}' then return redis.error_reply('ERR sluice: algorithm ' .. tostring(ARGV[7]) .. ' is not in this script') end
local key, op, extra = KEYS[1], ARGV[1], ARGV[4]
local now = tonumber(ARGV[2])
local cost, slack, maxd = tonumber(ARGV[3]), tonumber(ARGV[5]), tonumber(ARGV[6])
local limit, window, burst, precision = tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11])
`
  }
  const n = (x: number): string => {
    if (!Number.isSafeInteger(x)) throw new Error(`not an integer: ${x}`)
    return String(x)
  }
  const policy = `local limit, window, burst, precision = ${n(baked.limit)}, ${n(baked.windowMs)}, ${n(baked.burst)}, ${n(baked.precision)}`
  if (batch) {
    return `
local op, slack, maxd = 'c', ${n(baked.slackMs)}, 0
${policy}
local now = tonumber(ARGV[2])
`
  }
  return `
local key, extra, op = KEYS[1], ARGV[1] or '', ARGV[2] or 'c'
local now = tonumber(ARGV[3])
local cost, slack, maxd = tonumber(ARGV[4]) or 1, ${n(baked.slackMs)}, tonumber(ARGV[5]) or 0
${policy}
`
}

/** Reads `now` (Redis TIME unless given); `server` says which. */
function clock(code: string, baked: BakedPolicy | undefined, batch: boolean): string {
  return `
local floor, ceil, tonumber = math.floor, math.ceil, tonumber
local call = redis.call
${inputs(code, baked, batch)}local server = not now
if server then
  local t = call('TIME')
  now = tonumber(t[1]) * 1000 + floor(tonumber(t[2]) / 1000)
end
${batch ? `${ANY_BLOCK}${holdsRepeated(code) ? HOLD_REPEATED : ''}local function one(key, extra, cost)\n` : ''}`
}

/** Whether a batch script of this algorithm holds repeated keys (see HOLD_REPEATED). */
const holdsRepeated = (code: string): boolean => code !== 'sl'

/**
 * Batch scripts only (standalone Redis): whether any key of the prefix may be blocked, from
 * `<prefix>:blocks` (see BLOCK in block.ts), which lives at least as long as every block set
 * through it. While it is absent, the decisions skip the GET of their key's block: most of the
 * time no key is blocked, and that GET was about a sixth of a decision's time in Redis.
 */
const ANY_BLOCK = `local blocks = call('EXISTS', string.sub(KEYS[1], 1, string.find(KEYS[1], ':{', 1, true)) .. 'blocks') == 1
`

/**
 * Batch scripts of the algorithms whose state is one string or one hash (all but sliding-log):
 * a key that comes more than once in the batch (one client's burst, a shared limit) has its
 * state read once, held here while its decisions run in order, each on what the one before
 * left, and written once at the end (flush, from \`tail\`), with the TTL the last decision
 * set. Each decision's reply is what it would be alone; Redis ends in the same state as after
 * the decisions one by one. Keys that come once go straight to Redis, as before.
 *
 * \`call\` stands in for redis.call in \`one\`: reads of a held key come from the held state, and
 * its writes (SET PX, DEL, HSET, HDEL, PEXPIRE: all that the decisions write) change only it.
 */
const HOLD_REPEATED = `local rcall, repeated, held, dirty = call, {}, {}, {}
do
  local seen = {}
  for i = 1, #KEYS do
    if seen[KEYS[i]] then repeated[KEYS[i]] = true else seen[KEYS[i]] = true end
  end
end
local function held_hash(c, key)
  if c.h == nil then
    local h, was = {}, {}
    if not c.deleted then
      local all = rcall('HGETALL', key)
      for i = 1, #all, 2 do
        h[all[i]] = all[i + 1]
        was[all[i]] = true
      end
    end
    c.h, c.was = h, was
  end
  return c.h
end
local function call(cmd, key, ...)
  if not repeated[key] then return rcall(cmd, key, ...) end
  local c = held[key]
  if c == nil then
    c = {}
    held[key] = c
  end
  if cmd == 'GET' then
    if c.v == nil then c.v = rcall('GET', key) end
    return c.v
  elseif cmd == 'HGETALL' then
    local all = {}
    for field, value in pairs(held_hash(c, key)) do
      all[#all + 1] = field
      all[#all + 1] = value
    end
    return all
  end
  if not c.dirty then
    c.dirty = true
    dirty[#dirty + 1] = key
  end
  local args = { ... }
  if cmd == 'SET' then
    c.v, c.px = args[1], args[3]
  elseif cmd == 'DEL' then
    c.v, c.px, c.deleted = false, nil, true
    if c.h ~= nil then c.h = {} end
  elseif cmd == 'HSET' then
    local h = held_hash(c, key)
    for i = 1, #args, 2 do h[args[i]] = args[i + 1] end
  elseif cmd == 'HDEL' then
    local h = held_hash(c, key)
    for i = 1, #args do h[args[i]] = nil end
  elseif cmd == 'PEXPIRE' then
    c.px = args[1]
  else
    error('sluice: ' .. cmd .. ' on a held key')
  end
  return 1
end
-- Field lists in runs of 1000 arguments (an even number: field-value pairs stay whole), as
-- unpack cannot spread a list of any length.
local function in_chunks(cmd, key, list)
  for i = 1, #list, 1000 do rcall(cmd, key, unpack(list, i, math.min(i + 999, #list))) end
end
local function flush()
  for i = 1, #dirty do
    local key = dirty[i]
    local c = held[key]
    if c.h == nil then
      -- A string: its last SET PX, or gone.
      if c.v then rcall('SET', key, c.v, 'PX', c.px) else rcall('DEL', key) end
    else
      -- A hash: the fields it holds now, the ones it lost, and the TTL its last PEXPIRE set.
      local set, gone = {}, {}
      for field, value in pairs(c.h) do
        set[#set + 1] = field
        set[#set + 1] = value
      end
      if c.deleted then
        rcall('DEL', key)
      else
        for field in pairs(c.was) do
          if c.h[field] == nil then gone[#gone + 1] = field end
        end
      end
      if #set == 0 then
        if not c.deleted then rcall('DEL', key) end
      else
        in_chunks('HDEL', key, gone)
        in_chunks('HSET', key, set)
        if c.px then rcall('PEXPIRE', key, c.px) end
      end
    end
  end
end
`

/**
 * The end of a batch script (see `inputs`): the decision above, as the function `one`, for
 * each key in turn, in the order given, each with its own cost and sliding-log request id.
 * A decision that fails (a key of the wrong type) fails alone: its reply is the error, and
 * the others are decided as they would be without it. It wrote nothing: every write follows
 * the reads that can fail. One pcall covers the run of decisions from `from` on, and another
 * starts after a failure: a pcall per decision cost Redis 0.4 us each.
 */
function tail(code: string, batch: boolean): string {
  if (!batch) return ''
  return `end
local id, out, n, done = ARGV[1], {}, #KEYS, 0
local function run(from)
  for i = from, n do
    local extra = id
    if id ~= '' then extra = id .. '/' .. i end
    out[i] = one(KEYS[i], extra, tonumber(ARGV[i + 2]) or 1)
    done = i
  end
end
while done < n do
  local ok, err = pcall(run, done + 1)
  if ok then break end
  done = done + 1
  out[done] = redis.error_reply(type(err) == 'table' and err.err or tostring(err))
end
${holdsRepeated(code) ? 'flush()\n' : ''}return out
`
}

/** The key's block name (see driver.ts): from the state key's hash tag. */
const BLOCK_KEY = `string.sub(key, 1, string.find(key, '}:', 1, true) + 1) .. 'b'`

/** clock, then the key's block (consume, peek): while it holds the reply is -(ms until it ends). */
function prologue(code: string, baked: BakedPolicy | undefined, batch: boolean): string {
  return `${clock(code, baked, batch)}if op ~= 'r'${batch ? ' and blocks' : ''} then
  local blocked = redis.pcall('GET', ${BLOCK_KEY})
  if type(blocked) == 'string' then
    local wait = tonumber(blocked) - now
    if wait > 0 then return -wait end
  end
end
`
}

/** prologue, then GETs the state and decodes it into `sa`, `sb`. */
function head(code: string, baked: BakedPolicy | undefined, batch: boolean): string {
  // One MGET of the block and the state measured no cheaper than two GETs, and would need a
  // second path for the moment of a migration when the cluster refuses it.
  return `${prologue(code, baked, batch)}local v = call('GET', key)
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
  call('SET', key, string.format('%d%013d', ${a} + 1, ${b}), 'PX', string.format('%d', ${expiresAt} - now + slack))
else
  call('SET', key, string.format('%d:%d', ${a}, ${b}), 'PX', string.format('%d', ${expiresAt} - now + slack))
end
`
}

/**
 * The admission test of decide_meter (meter.ts) on `backlog`, with reservations (`maxd`,
 * maxDelayMs) as there. The reply is `backlog` alone: every field of the outcome is a function
 * of it, the policy, the cost and maxDelayMs, which the store computes with core's formulas
 * (flat-outcome.ts). Peek, a rejection and a cost-0 consume return here; an admitted consume
 * falls through with `need` set.
 */
function meterTest(shaping: boolean): string {
  return `
local need = cost * window
if cost > burst or op == 'p' or cost == 0 then return backlog end
if maxd > 0 then
  ${shaping ? 'if backlog > maxd * limit then return backlog end' : 'if backlog + need - burst * window > maxd * limit then return backlog end'}
elseif backlog + need > burst * window then
  return backlog
end
`
}

export const gcraFlat = (baked?: BakedPolicy, batch = false): string => `${head('gc', baked, batch)}
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
${tail('gc', batch)}`

/** token-bucket and leaky-bucket (shaping): sa = level (missing x windowMs), sb = last refill. */
export function bucketFlat(code: 'tb' | 'lb', baked?: BakedPolicy, batch = false): string {
  return `${head(code, baked, batch)}
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
${tail(code, batch)}`
}

/** fixed-window: sa = count, sb = window start. */
export const fixedWindowFlat = (
  baked?: BakedPolicy,
  batch = false,
): string => `${head('fw', baked, batch)}
if op == 'r' then
  local at = now - tonumber(extra)
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
-- A clock behind the newest window counted is held in that window (core's currentWindow).
if sb > window_start then window_start = sb end
local count = 0
if sb == window_start then count = sa end
-- The reply packs the count before this request and the ms to the next window (1..window; a
-- held window's wait, longer, is told as one window): the store computes the outcome from
-- them with core's formulas (decideFixedWindow).
local reply = count * (window + 1) + math.min(window, window_start + window - now)
if cost > limit or count + cost > limit or op == 'p' or cost == 0 then return reply end
count = count + cost
${save('count', 'window_start', 'window_start + window')}
return reply
${tail('fw', batch)}`

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
export const slidingWindowFlat = (
  baked?: BakedPolicy,
  batch = false,
): string => `${prologue('sw', baked, batch)}local size = window / precision
local ring = precision + 1
local h = call('HGETALL', key)
local newest, c = 0, {}
for i = 1, #h, 2 do
  if h[i] == 'n' then newest = tonumber(h[i + 1]) else c[tonumber(h[i])] = tonumber(h[i + 1]) end
end
if op == 'r' then
  local at = now - tonumber(extra)
  local bucket = floor(at / size)
  if not (bucket < floor(now / size) - precision or bucket > newest or bucket <= newest - ring) then
    local slot = bucket % ring
    local left = (c[slot] or 0) - cost
    if left > 0 then
      c[slot] = left
      call('HSET', key, string.format('%d', slot), string.format('%d', left))
    elseif c[slot] then
      c[slot] = nil
      call('HDEL', key, string.format('%d', slot))
    end
  end
  -- save: the TTL ends with the newest bucket that still holds a count (resetAt).
  local expires_at = 0
  local bucket = newest
  while bucket > newest - ring and bucket >= 0 do
    if (c[bucket % ring] or 0) > 0 then
      expires_at = (bucket + precision + 1) * size
      break
    end
    bucket = bucket - 1
  end
  if expires_at <= now then
    call('DEL', key)
  else
    call('PEXPIRE', key, string.format('%d', expires_at - now + slack))
  end
  return nil
end
-- The reply: the state as read, as integers (no bulk strings for the client to parse).
local reply, r = { now, newest }, 2
for i = 1, #h, 2 do
  if h[i] ~= 'n' then
    reply[r + 1], reply[r + 2] = tonumber(h[i]), tonumber(h[i + 1])
    r = r + 2
  end
end
local h = reply
if cost > limit or op == 'p' or cost == 0 then return h end
-- decide's admission test: floor(scaledEstimate / size) + cost <= limit, at now held at the
-- newest bucket already counted.
local t = now
if newest * size > t then t = newest * size end
local current = floor(t / size)
local full, oldest = 0, 0
for j = current - precision, current do
  if j <= newest and j > newest - ring and j >= 0 then
    if j == current - precision then oldest = c[j % ring] or 0 else full = full + (c[j % ring] or 0) end
  end
end
if floor((full * size + oldest * (size - (t - current * size))) / size) + cost > limit then return h end
-- apply: buckets after the newest one restart at zero (their slots are the ones to clear).
local bucket = floor(now / size)
if bucket < newest then bucket = newest end
local slot = bucket % ring
if bucket > newest then
  local stale = bucket - newest
  -- The new bucket's own slot is one of them: it restarts at cost (HSET below).
  local gone, first = {}, bucket - stale + 1
  for s, _ in pairs(c) do
    if s ~= slot and (stale >= ring or (s - first) % ring < stale) then gone[#gone + 1] = string.format('%d', s) end
  end
  for i = 1, #gone, 1000 do call('HDEL', key, unpack(gone, i, math.min(i + 999, #gone))) end
  call('HSET', key, 'n', string.format('%d', bucket), string.format('%d', slot), string.format('%d', cost))
else
  call('HSET', key, string.format('%d', slot), string.format('%d', (c[slot] or 0) + cost))
  -- The newest bucket already counted: every save since set the TTL to end with its window,
  -- at the same moment on the server's clock (with client time, the writer's clock moves it).
  if (c[slot] or 0) > 0 and server then return h end
end
call('PEXPIRE', key, string.format('%d', (bucket + precision + 1) * size - now + slack))
return h
${tail('sw', batch)}`

/**
 * sliding-log (sliding-log.ts in core, lua/sliding-log.ts here): the same sorted set, one
 * member `<request id>.<n>` per admitted cost unit scored by its timestamp, and the same TTL
 * (the newest timestamp's end of window). A consume is TIME, GET (block), ZCOUNT, ZRANGE (the
 * newest, when any is live), ZRANGEBYSCORE (rejections only), and when admitted
 * ZREMRANGEBYSCORE, ZADD and PEXPIRE: after the ZADD the newest score is max(newest, now), so
 * it is not read again.
 *
 * The reply is `{ live, newest - now, mustExpire - now }` (0 where decide does not read it):
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
  if at <= now - window then return nil end
  local at_s = string.format('%d', at)
  local gone = call('ZRANGEBYSCORE', key, at_s, at_s, 'LIMIT', 0, cost)
  if #gone == 0 then return nil end
  for i = 1, #gone, 1000 do call('ZREM', key, unpack(gone, i, math.min(i + 999, #gone))) end
  local newest = call('ZRANGE', key, -1, -1, 'WITHSCORES')
  if newest[2] then
    local ttl = tonumber(newest[2]) + window - now
    if ttl <= 0 then call('DEL', key) else call('PEXPIRE', key, string.format('%d', ttl + slack)) end
  end
  return nil
end
local cut = string.format('%d', now - window)
local after = '(' .. cut
local live = call('ZCOUNT', key, after, '+inf')
local newest = now
if live > 0 then newest = tonumber(call('ZRANGE', key, -1, -1, 'WITHSCORES')[2]) end
local must = now
if cost <= limit and live + cost > limit then
  must = tonumber(call('ZRANGEBYSCORE', key, after, '+inf', 'WITHSCORES', 'LIMIT', live + cost - limit - 1, 1)[2])
end
local reply = { live, newest - now, must - now }
if cost > limit or live + cost > limit or op == 'p' or cost == 0 then return reply end
call('ZREMRANGEBYSCORE', key, '-inf', cut)
local at = string.format('%d', now)
if cost == 1 then
  call('ZADD', key, at, extra .. '.1')
else
  local id = extra .. '.'
  local args = {}
  for i = 1, cost do
    args[#args + 1] = at
    args[#args + 1] = id .. i
  end
  for i = 1, #args, 1000 do call('ZADD', key, unpack(args, i, math.min(i + 999, #args))) end
end
if newest < now then newest = now end
call('PEXPIRE', key, string.format('%d', newest + window - now + slack))
return reply
${tail('sl', batch)}`
