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

/**
 * The same for a window anchored at the key's first request (core's first-request-window.ts):
 * the stored window while it holds a count and has not ended (a clock stepped back behind its
 * start keeps it), else one starting now.
 */
export const FK_CURRENT = `local window_start = now
local count = 0
if sa > 0 and now < sb + window then
  window_start = sb
  count = sa
end
`

/** Whether a charge made at `at` counts in the stored window (refund's test), per anchor. */
export const FW_HELD_AT = 'sb == at - at % window'
export const FK_HELD_AT = 'sb <= at and at < sb + window'

/** The reply: count x (window + 1) + ms to the next window (a held window's wait told as one). */
export const FW_REPLY = 'count * (window + 1) + math.min(window, window_start + window - now)'

/** Whether the request fits (decide's admission test). */
export const FW_FITS = 'cost <= limit and count + cost <= limit'

/**
 * The window a penalty counts in (`window_start`, `count`), or a return: clock-aligned
 * windows leave a newer window than the clock's alone (core's penalize), a key's own window
 * counts a penalty as a request.
 */
const FW_PENALIZED = `local window_start = now - now % window
if sb > window_start then return end
local count = 0
if sb == window_start then count = sa end
`

/**
 * The generic module of one anchor: `name` its table, `code` its key in ALG, `current` its window fragment,
 * `heldAt` its refund test, `penalized` its penalty's window.
 */
const fixedWindowModule = (
  name: string,
  code: string,
  current: string,
  heldAt: string,
  penalized: string,
): string => `
local ${name} = {}
ALG.${code} = ${name}

function ${name}.load(key)
  local count, window_start = load_pair(key, true)
  return { [0] = window_start, count }
end

function ${name}.look(s, now, p, cost)
  local sa, sb, limit, window = s[1], s[0], p.limit, p.window
  ${current}
  return ${FW_FITS}, ${FW_REPLY}
end

function ${name}.apply(s, now, p, cost)
  local sa, sb, window = s[1], s[0], p.window
  ${current}
  s[0] = window_start
  s[1] = count + cost
end

-- at nil: a reward, from the stored window (a stale one no longer counts anyway).
function ${name}.refund(s, now, p, cost, at)
  local sb, window = s[0], p.window
  if at == nil or (${heldAt}) then s[1] = max(0, s[1] - cost) end
end

function ${name}.penalize(s, now, p, cost)
  local sa, sb, window = s[1], s[0], p.window
  ${penalized}
  s[0] = window_start
  s[1] = count
  local raised = min(p.limit, count + cost)
  if raised > count then s[1] = raised end
end

function ${name}.save(key, s, now, p)
  local expires_at = 0
  if s[1] > 0 then expires_at = s[0] + p.window end
  save_pair(key, s[1], s[0], expires_at, now, true)
end
`

/** fixed-window, both anchors: `fw` at the clock's multiples of the window, `fk` per key. */
export const FIXED_WINDOW =
  fixedWindowModule('fixed_window', 'fw', FW_CURRENT, FW_HELD_AT, FW_PENALIZED) +
  fixedWindowModule('first_request_window', 'fk', FK_CURRENT, FK_HELD_AT, FK_CURRENT)
