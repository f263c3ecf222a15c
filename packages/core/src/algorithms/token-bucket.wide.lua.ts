/**
 * token-bucket's Lua for wide policies (isWide), and with shaping leaky-bucket's, mirroring
 * bucketWide in token-bucket.ts: [whole units missing, remainder x windowMs, lastRefill], the
 * backlog between the first two held in numbers while it is narrow, in limbs past it
 * (meter.wide.lua.ts, limbs.lua.ts). Generic scripts only (the wide layout of @sluice/redis):
 * codes `tbw` and `lbw`, the state read and written with `load_vector`/`save_vector` as core's
 * three slots.
 */
import { WIDE_METER_LUA } from './meter.wide.lua'
import type { WideLuaFragments } from './lua'

function bucketWideModule(code: 'tbw' | 'lbw', shaping: boolean): string {
  const name = code === 'tbw' ? 'token_bucket_wide' : 'leaky_bucket_wide'
  return `
local ${name} = {}
ALG.${code} = ${name}

function ${name}.load(key)
  return load_vector(key, 3)
end

-- The level drained since the last refill (held while the clock is behind it), never below 0,
-- as a number while the level is narrow (meter.wide.lua.ts); nil past it. Whether it drained
-- to 0 is tested by division (exact there, as in n_div): the drain itself, elapsed x limit,
-- is formed only below the level, since a long idle span would take it past 2^63, where Lua
-- 5.4's integers wrap.
local function ${name}_narrow(s, now, p)
  if s[1] > (p.nw or n_units(p, 'nw', p.window)) then return nil end
  local level = s[1] * p.window + s[2]
  if now <= s[3] then return level end
  local elapsed = now - s[3]
  if elapsed >= level / p.limit then return 0 end
  return level - elapsed * p.limit
end

-- The same backlog in limbs.
local function ${name}_backlog(s, now, p)
  local level = w_muladd(s[1], p.window, s[2])
  if now <= s[3] then return level end
  local left = w_submul(level, now - s[3], p.limit)
  if w_neg(left) then return W0 end
  return left
end

-- s.level keeps the level written for save, which would otherwise build it again from s.
local function ${name}_set(s, now, p, level)
  if w_empty(level) then
    s[1], s[2], s.level = 0, 0, nil
  else
    s[1], s[2] = w_div(level, p.window)
    s.level = level
  end
  if now > s[3] then s[3] = now end
end

local function ${name}_set_narrow(s, now, p, level)
  s[1], s[2] = n_div(level, p.window)
  s.level = nil
  if now > s[3] then s[3] = now end
end

function ${name}.look(s, now, p, cost)
  local backlog = ${name}_narrow(s, now, p)
  if backlog == nil then
    backlog = ${name}_backlog(s, now, p)
  else
    local fits = n_fits(backlog, p, cost)
    if fits ~= nil then return fits, backlog end
    backlog = w_of(backlog)
  end
  return w_fits(backlog, p, cost, ${shaping}), backlog
end

-- backlog: what look replied for this state and now, when the caller kept it.
function ${name}.apply(s, now, p, cost, backlog)
  if backlog == nil then backlog = ${name}_narrow(s, now, p) or ${name}_backlog(s, now, p) end
  if type(backlog) == 'number' then
    local after = n_after(backlog, p, cost)
    if after ~= nil then return ${name}_set_narrow(s, now, p, after) end
    backlog = w_of(backlog)
  end
  ${name}_set(s, now, p, w_add(backlog, w_cost(p, cost)))
end

function ${name}.refund(s, now, p, cost, at)
  ${name}_set(s, now, p, w_sub(${name}_backlog(s, now, p), w_cost(p, cost)))
end

function ${name}.penalize(s, now, p, cost)
  ${name}_set(s, now, p, w_penalized(${name}_backlog(s, now, p), p, cost))
end

-- Expires when the bucket is full again: the last refill + ceil(level / limit).
function ${name}.save(key, s, now, p)
  local expires_at = 0
  if s[1] > 0 or s[2] > 0 then
    local q, r
    if s[1] <= (p.nw or n_units(p, 'nw', p.window)) then
      q, r = n_div(s[1] * p.window + s[2], p.limit)
    else
      q, r = w_div(s.level or w_muladd(s[1], p.window, s[2]), p.limit)
    end
    expires_at = s[3] + q
    if r > 0 then expires_at = expires_at + 1 end
  end
  save_vector(key, format('%d,%d,%d', s[1], s[2], s[3]), expires_at, now)
end
`
}

/** A wide bucket's fragments: token-bucket's (`tbw`), or with shaping leaky-bucket's (`lbw`). */
export function bucketWideLua(code: 'tbw' | 'lbw', shaping: boolean): WideLuaFragments {
  return { code, module: bucketWideModule(code, shaping), shared: WIDE_METER_LUA }
}

export const tokenBucketWideLua = bucketWideLua('tbw', false)
