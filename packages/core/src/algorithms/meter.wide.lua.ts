/**
 * The wide meters' shared Lua (token-bucket, leaky-bucket, gcra past 2^50, see isWide),
 * mirroring decideMeterWide and penalizedWide in meter.ts on limbs (limbs.lua.ts): the
 * admission test and penalties. The reply is the backlog's limbs, from which the store
 * computes the outcome with core's BigInt formulas (@sluice/redis flat-outcome.ts).
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

-- Whether a wide value is 0 or less (an empty meter).
local function w_empty(x)
  return w_neg(x) or w_cmp(x, W0) == 0
end
`
