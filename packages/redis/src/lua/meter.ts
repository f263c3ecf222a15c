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

local function drained(level, last, now, p)
  if now <= last then return level end
  local left = level - (now - last) * p.limit
  if left > 0 then return left end
  return 0
end
`
