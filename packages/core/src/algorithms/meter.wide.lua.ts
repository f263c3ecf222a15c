/**
 * The wide meters' shared Lua (token-bucket, leaky-bucket, gcra past 2^50, see isWide),
 * mirroring decideMeterWide and penalizedWide in meter.ts on limbs (limbs.lua.ts): the
 * admission test and penalties. The reply is the backlog, from which the store computes the
 * outcome with core's BigInt formulas (@sluice/redis flat-outcome.ts): a number while it is
 * narrow (below 2^52), else its limbs.
 *
 * The narrow path: a wide budget's backlog is mostly far below 2^52 (10^12 tokens a month
 * drain 2.7 x 10^21 backlog units a month, 10^12 a ms), and there plain numbers are exact
 * (a sum of two stays below 2^53), so a module decides in numbers while the backlog stays
 * there and in limbs past it: the same transitions, with about half the instructions in Redis
 * (bench/instructions-redis.js, docs/benchmarks.md).
 */
import { LIMBS_LUA } from './limbs.lua'

export const WIDE_METER_LUA = `${LIMBS_LUA}
-- burst x window, kept in the policy's table: a flat wide script keeps one table for a whole
-- batch (the limbs are never changed in place).
local function w_capacity(p)
  local capacity = p.capacity
  if capacity == nil then
    capacity = w_mul(p.burst, p.window)
    p.capacity = capacity
  end
  return capacity
end

-- cost x window, kept for the last cost asked (a batch's costs are mostly the same).
local function w_cost(p, cost)
  if p.cost_of ~= cost then p.cost_limbs, p.cost_of = w_mul(cost, p.window), cost end
  return p.cost_limbs
end

-- core's admission (meterFits) on a wide backlog; shaping: leaky-bucket's.
local function w_fits(backlog, p, cost, shaping)
  if cost > p.burst then return false end
  local after = w_add(backlog, w_cost(p, cost))
  if MAXD > 0 then
    local ahead = backlog
    if not shaping then ahead = w_sub(after, w_capacity(p)) end
    return w_cmp(ahead, w_mul(MAXD, p.limit)) <= 0
  end
  return w_cmp(after, w_capacity(p)) <= 0
end

-- The backlog after a penalty: raised by cost x window, never past the capacity, never lowered.
local function w_penalized(backlog, p, cost)
  local capacity = w_capacity(p)
  local raised = w_add(backlog, w_cost(p, cost))
  if w_cmp(raised, capacity) > 0 then raised = capacity end
  if w_cmp(raised, backlog) > 0 then return raised end
  return backlog
end

local N52 = 4503599627370496

-- floor(2^52 / d) - 2, kept in p under \`name\` (\`nw\` for the window, \`nl\` for the limit):
-- whole units of d below which x units (and one unit more) stay below 2^52, the division's
-- rounding (at most 1) included. Callers read p.nw or p.nl first: a Lua call per decision
-- cost more than the test it serves.
local function n_units(p, name, d)
  local units = floor(N52 / d) - 2
  p[name] = units
  return units
end

-- floor(x / d) and the remainder, exact for x in [0, 2^52) and d in (0, 2^53): the quotient
-- is below 2^52 / d, where a double's rounding error is below 1 / (2d), and a true quotient
-- that is no integer is at least 1 / d from the next one (so x / d also compares exactly
-- with an integer).
local function n_div(x, d)
  local q = floor(x / d)
  return q, x - q * d
end

-- backlog + cost x window while it stays narrow; nil where limbs must take it.
local function n_after(backlog, p, cost)
  if cost > (p.nw or n_units(p, 'nw', p.window)) then return nil end
  local after = backlog + cost * p.window
  if after >= N52 then return nil end
  return after
end

-- core's admission (meterFits) on a narrow backlog: true or false, nil where limbs decide (a
-- throttle's wait, or a sum past 2^52). after <= burst x window, tested by division (exact
-- below 2^52, as in n_div): the product may pass 2^63, where Lua 5.4's integers wrap.
local function n_fits(backlog, p, cost)
  if cost > p.burst then return false end
  if MAXD > 0 then return nil end
  local after = n_after(backlog, p, cost)
  if after == nil then return nil end
  return after / p.window <= p.burst
end

-- Whether a wide value is 0 or less (an empty meter).
local function w_empty(x)
  return w_neg(x) or w_cmp(x, W0) == 0
end
`
