/**
 * fixed-window, mirroring core's algorithms/fixed-window.ts. One source for both script
 * families: the generic module below and the flat script (flat/windows.ts) are built from the
 * same fragments, which read `sa` (the count), `sb` (the window start), `now`, `cost`, `limit`
 * and `window`.
 * Redis state: one string, the pair (count, windowStart) as an int64 (see encode_pair),
 * expiring at the end of the window.
 */

/**
 * The window `now` counts in (held at the newest window counted when the clock stepped back,
 * as core's currentWindow), and `count`, its count before this request.
 */
export const FW_CURRENT = `local window_start = now - now % window
if sb > window_start then window_start = sb end
local count = 0
if sb == window_start then count = sa end
`

/** The reply: count x (window + 1) + ms to the next window (a held window's wait told as one). */
export const FW_REPLY = 'count * (window + 1) + math.min(window, window_start + window - now)'

/** Whether the request fits (decide's admission test). */
export const FW_FITS = 'cost <= limit and count + cost <= limit'

export const FIXED_WINDOW = `
local fixed_window = {}
ALG.fw = fixed_window

function fixed_window.load(key)
  local count, window_start = decode_pair(call('GET', key))
  return { [0] = window_start, count }
end

function fixed_window.look(s, now, p, cost)
  local sa, sb, limit, window = s[1], s[0], p.limit, p.window
  ${FW_CURRENT}
  return ${FW_FITS}, ${FW_REPLY}
end

function fixed_window.apply(s, now, p, cost)
  local sa, sb, window = s[1], s[0], p.window
  ${FW_CURRENT}
  s[0] = window_start
  s[1] = count + cost
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
