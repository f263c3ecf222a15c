/**
 * The wide meters' shared Lua (token-bucket, leaky-bucket, gcra past 2^50, see isWide),
 * mirroring decideMeterWide and penalizedWide in meter.ts on limbs (limbs.lua.ts): the
 * admission test and penalties. The reply is the backlog's limbs, from which the store
 * computes the outcome with core's BigInt formulas (@sluice/redis flat-outcome.ts).
 */
import { LIMBS_LUA } from './limbs.lua'

export const WIDE_METER_LUA = `${LIMBS_LUA}
-- core's admission (meterFits) on a wide backlog; shaping: leaky-bucket's.
local function w_fits(backlog, p, cost, shaping)
  if cost > p.burst then return false end
  local after = w_add(backlog, w_mul(cost, p.window))
  if MAXD > 0 then
    local ahead = backlog
    if not shaping then ahead = w_sub(after, w_mul(p.burst, p.window)) end
    return w_cmp(ahead, w_mul(MAXD, p.limit)) <= 0
  end
  return w_cmp(after, w_mul(p.burst, p.window)) <= 0
end

-- The backlog after a penalty: raised by cost x window, never past the capacity, never lowered.
local function w_penalized(backlog, p, cost)
  local capacity = w_mul(p.burst, p.window)
  local raised = w_add(backlog, w_mul(cost, p.window))
  if w_cmp(raised, capacity) > 0 then raised = capacity end
  if w_cmp(raised, backlog) > 0 then return raised end
  return backlog
end

-- Whether a wide value is 0 or less (an empty meter).
local function w_empty(x)
  return w_neg(x) or w_cmp(x, W0) == 0
end
`
