/**
 * fixed-window, mirroring core's algorithms/fixed-window.ts.
 * Redis state: one string, the pair (count, windowStart) as an int64 (see encode_pair),
 * expiring at the end of the window.
 */
export const FIXED_WINDOW = `
local fixed_window = {}
ALG.fw = fixed_window

function fixed_window.load(key)
  local count, window_start = decode_pair(call('GET', key))
  return { [0] = window_start, count }
end

-- A clock behind the newest window counted is held in that window (see core's currentWindow).
local function current_window(s, now, p)
  local aligned = now - now % p.window
  if s[0] > aligned then return s[0] end
  return aligned
end

-- The count before this request and the ms to the next window packed as the flat script's
-- reply (count x (window + 1) + ms, a held window's wait told as one window).
function fixed_window.look(s, now, p, cost)
  local window_start = current_window(s, now, p)
  local count = 0
  if s[0] == window_start then count = s[1] end
  local reply = count * (p.window + 1) + min(p.window, window_start + p.window - now)
  return cost <= p.limit and count + cost <= p.limit, reply
end

function fixed_window.apply(s, now, p, cost)
  local window_start = current_window(s, now, p)
  if s[0] ~= window_start then
    s[0] = window_start
    s[1] = 0
  end
  s[1] = s[1] + cost
end

-- at nil: a reward, from the stored window (a stale one no longer counts anyway).
function fixed_window.refund(s, now, p, cost, at)
  if at == nil or s[0] == at - at % p.window then s[1] = max(0, s[1] - cost) end
end

function fixed_window.penalize(s, now, p, cost)
  local window_start = now - now % p.window
  if s[0] > window_start then return end
  if s[0] ~= window_start then
    s[0] = window_start
    s[1] = 0
  end
  local raised = min(p.limit, s[1] + cost)
  if raised > s[1] then s[1] = raised end
end

function fixed_window.save(key, s, now, p)
  local expires_at = 0
  if s[1] > 0 then expires_at = s[0] + p.window end
  save_pair(key, s[1], s[0], expires_at, now)
end
`
