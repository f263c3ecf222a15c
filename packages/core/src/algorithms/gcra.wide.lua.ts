/**
 * gcra's Lua for wide policies (isWide), mirroring gcraWide in gcra.ts: the same state as the
 * narrow one, [tatMs, tatRemainder] (the remainder below `limit`), the backlog between them
 * held in numbers while it is narrow, in limbs past it (meter.wide.lua.ts, limbs.lua.ts).
 * Generic scripts only (the wide layout of @sluice/redis): code `gcw`, the state read and
 * written with `load_pair`/`save_pair` in core's order.
 */
import { WIDE_METER_LUA } from './meter.wide.lua'
import type { WideLuaFragments } from './lua'

const GCRA_WIDE = `
local gcra_wide = {}
ALG.gcw = gcra_wide

function gcra_wide.load(key)
  local rem, tat = load_pair(key, true)
  return { [0] = tat, rem }
end

-- (tat - now) x limit + rem, never below 0; the remainder is below limit, so a TAT behind now
-- leaves none. As a number while it is narrow (meter.wide.lua.ts); nil past it.
local function gcw_narrow(s, now, p)
  local ahead = s[0] - now
  if ahead < 0 then return 0 end
  if ahead > (p.nl or n_units(p, 'nl', p.limit)) then return nil end
  return ahead * p.limit + s[1]
end

-- The same backlog in limbs.
local function gcw_backlog(s, now, p)
  local ahead = s[0] - now
  if ahead < 0 then return W0 end
  return w_muladd(ahead, p.limit, s[1])
end

local function gcw_set(s, now, p, after)
  if w_empty(after) then
    s[0], s[1] = 0, 0
    return
  end
  local whole, rem = w_div(after, p.limit)
  s[0], s[1] = now + whole, rem
end

function gcra_wide.look(s, now, p, cost)
  local backlog = gcw_narrow(s, now, p)
  if backlog == nil then
    backlog = gcw_backlog(s, now, p)
  else
    local fits = n_fits(backlog, p, cost)
    if fits ~= nil then return fits, backlog end
    backlog = w_of(backlog)
  end
  return w_fits(backlog, p, cost, false), backlog
end

-- backlog: what look replied for this state and now, when the caller kept it.
function gcra_wide.apply(s, now, p, cost, backlog)
  if backlog == nil then backlog = gcw_narrow(s, now, p) or gcw_backlog(s, now, p) end
  if type(backlog) == 'number' then
    local after = n_after(backlog, p, cost)
    -- An empty meter (a cost of 0) is gcw_set's to clear.
    if after ~= nil and after > 0 then
      local whole, rem = n_div(after, p.limit)
      s[0], s[1] = now + whole, rem
      return
    end
    backlog = w_of(backlog)
  end
  gcw_set(s, now, p, w_add(backlog, w_cost(p, cost)))
end

function gcra_wide.refund(s, now, p, cost, at)
  gcw_set(s, now, p, w_sub(gcw_backlog(s, now, p), w_cost(p, cost)))
end

function gcra_wide.penalize(s, now, p, cost)
  gcw_set(s, now, p, w_penalized(gcw_backlog(s, now, p), p, cost))
end

-- Expires at the TAT, rounded up to whole ms (core's tatExpiry).
function gcra_wide.save(key, s, now, p)
  local tat, rem = s[0], s[1]
  local expires_at = 0
  if tat > 0 or rem > 0 then
    expires_at = tat
    if rem > 0 then expires_at = tat + 1 end
  end
  save_pair(key, rem, tat, expires_at, now, true)
end
`

export const gcraWideLua: WideLuaFragments = {
  code: 'gcw',
  module: GCRA_WIDE,
  shared: WIDE_METER_LUA,
}
