/**
 * Mirrors core's algorithms/meter.ts (decideMeter, drained) line by line: token-bucket,
 * leaky-bucket and gcra keep a backlog multiplied by the window, which drains by exactly
 * `limit` per ms. Outcome `o`: {allowed (1/0), remaining, resetMs, retryAfterMs (-1: never), delayMs}.
 */
export const METER = `
-- Whether a request of cost fits the backlog: core's decideMeter admission, reservations
-- (MAXD) as there. The outcome itself the store computes from the backlog (flat-outcome.ts).
local function meter_fits(backlog, p, cost, shaping)
  if cost > p.burst then return false end
  local need = cost * p.window
  if MAXD > 0 and cost > 0 then
    local ahead = backlog + need - p.burst * p.window
    if shaping then ahead = backlog end
    return ahead <= MAXD * p.limit
  end
  return backlog + need <= p.burst * p.window
end

-- The backlog after a penalty: raised by cost x window, never past the capacity (core: penalized).
local function penalized(backlog, p, cost)
  local raised = min(p.burst * p.window, backlog + cost * p.window)
  if raised > backlog then return raised end
  return backlog
end

local function drained(level, last, now, p)
  if now <= last then return level end
  local left = level - (now - last) * p.limit
  if left > 0 then return left end
  return 0
end
`
