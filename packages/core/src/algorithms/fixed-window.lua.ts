import { peekOr, refundBranch, type FlatSteps, type LuaFragments, type LuaFrame } from './lua'

/**
 * fixed-window's Lua, both anchors (fixed-window.ts, first-request-window.ts). One source for
 * both script families: the generic modules and the flat bodies below are built from the same
 * fragments, which read `sa` (the count), `sb` (the window start), `now`, `cost`, `limit` and
 * `window`.
 * Redis state: one string, the pair (count, windowStart) as an int64 (see encode_pair),
 * expiring at the end of the window.
 */

/**
 * The window `now` counts in (held at the newest window counted when the clock stepped back,
 * as core's currentWindow), and `count`, its count before this request.
 */
const FW_CURRENT = `local window_start = now - now % window
if sb > window_start then window_start = sb end
local count = 0
if sb == window_start then count = sa end
`

/**
 * The same for a window anchored at the key's first request (core's first-request-window.ts):
 * the stored window while it holds a count and has not ended (a clock stepped back behind its
 * start keeps it), else one starting now.
 */
const FK_CURRENT = `local window_start = now
local count = 0
if sa > 0 and now < sb + window then
  window_start = sb
  count = sa
end
`

/** Whether a charge made at `at` counts in the stored window (refund's test), per anchor. */
const FW_HELD_AT = 'sb == at - at % window'
const FK_HELD_AT = 'sb <= at and at < sb + window'

/**
 * `reply`: count x (window + 1) + ms to the next window (a held window's wait told as one).
 * The smaller of the two by a comparison: `math.min` is a C call in Redis.
 */
const FW_REPLY = `local until_next = window_start + window - now
if until_next > window then until_next = window end
local reply = count * (window + 1) + until_next
`

/** Whether the request fits (decide's admission test). */
const FW_FITS = 'cost <= limit and count + cost <= limit'

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
  ${FW_REPLY}
  return ${FW_FITS}, reply
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
const FIXED_WINDOW =
  fixedWindowModule('fixed_window', 'fw', FW_CURRENT, FW_HELD_AT, FW_PENALIZED) +
  fixedWindowModule('first_request_window', 'fk', FK_CURRENT, FK_HELD_AT, FK_CURRENT)

/**
 * On Redis's clock an admitted fixed-window request replies when it was counted (StoreResult.at);
 * a batch says it once, after every reply.
 */
const ADMITTED_AT = 'if server then return { reply, now } end\n'

/** A timed refund of one anchor (`perKey`: windows start at each key's first request). */
const fixedWindowRefund = (
  perKey: boolean,
  frame: LuaFrame,
): string => `local at = now - tonumber(extra)
local count = sa
if ${perKey ? FK_HELD_AT : FW_HELD_AT} then
  count = sa - cost
  if count < 0 then count = 0 end
end
local expires_at = 0
if count > 0 then expires_at = sb + window end
${frame.save('count', 'sb', 'expires_at')}`

/** An admitted consume's write. */
const fixedWindowApply = (frame: LuaFrame): string => `count = count + cost
${frame.save('count', 'window_start', 'window_start + window')}`

/** The flat body of one anchor: `perKey`, windows start at each key's first request. */
const fixedWindowFlat = (perKey: boolean, frame: LuaFrame): string => `
${refundBranch(frame, fixedWindowRefund(perKey, frame))}${perKey ? FK_CURRENT : FW_CURRENT}-- The store computes the outcome from the reply with core's decide (flat-outcome.ts).
${FW_REPLY}if not (${FW_FITS}) or ${peekOr(frame)}cost == 0 then return reply end
${fixedWindowApply(frame)}
${frame.batch ? '' : ADMITTED_AT}return reply
`

/** The steps of one anchor (LuaFragments.steps). */
const fixedWindowSteps = (perKey: boolean, frame: LuaFrame): FlatSteps => ({
  read: '',
  refund: fixedWindowRefund(perKey, frame),
  look: `${perKey ? FK_CURRENT : FW_CURRENT}${FW_REPLY}local fits = ${FW_FITS}
`,
  apply: fixedWindowApply(frame),
})

/** Clock-aligned windows; the module defines both anchors' (`fw`, `fk`). */
export const fixedWindowLua: LuaFragments = {
  module: FIXED_WINDOW,
  swapped: true,
  flat: (frame) => fixedWindowFlat(false, frame),
  steps: (frame) => fixedWindowSteps(false, frame),
}

/** Windows anchored at each key's first request (LimitOptions.anchor). */
export const firstRequestWindowLua: LuaFragments = {
  ...fixedWindowLua,
  flat: (frame) => fixedWindowFlat(true, frame),
  steps: (frame) => fixedWindowSteps(true, frame),
}
