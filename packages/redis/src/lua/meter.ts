/**
 * Mirrors core's algorithms/meter.ts (decideMeter, drained) line by line: token-bucket,
 * leaky-bucket and gcra keep a backlog multiplied by the window, which drains by exactly
 * `limit` per ms. Outcome `o`: {allowed (1/0), remaining, resetMs, retryAfterMs (-1: never), delayMs}.
 */
export const METER = `
local function decide_meter(backlog, p, cost, o, shaping)
  local capacity = p.burst * p.window
  local need = cost * p.window
  if cost > p.burst then
    return reject_forever(o, floor((capacity - backlog) / p.window), ceil(backlog / p.limit))
  end
  if MAXD > 0 and cost > 0 then
    local ahead = backlog + need - capacity
    if shaping then ahead = backlog end
    local reserve = MAXD * p.limit
    if ahead <= reserve then
      o[1] = 1
      o[2] = max(0, floor((capacity - backlog - need) / p.window))
      o[3] = ceil((backlog + need) / p.limit)
      o[4] = 0
      if ahead > 0 then o[5] = ceil(ahead / p.limit) else o[5] = 0 end
    else
      o[1] = 0
      o[2] = max(0, floor((capacity - backlog) / p.window))
      o[3] = ceil(backlog / p.limit)
      o[4] = ceil((ahead - reserve) / p.limit)
      o[5] = 0
    end
    return
  end
  if backlog + need <= capacity then
    o[1] = 1
    o[2] = floor((capacity - backlog - need) / p.window)
    o[3] = ceil((backlog + need) / p.limit)
    o[4] = 0
    if shaping and cost > 0 then o[5] = ceil(backlog / p.limit) else o[5] = 0 end
  else
    o[1] = 0
    o[2] = max(0, floor((capacity - backlog) / p.window))
    o[3] = ceil(backlog / p.limit)
    o[4] = ceil((backlog + need - capacity) / p.limit)
    o[5] = 0
  end
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
