import { refundBranch, type LuaFragments } from './lua'
import { flatMeterFits, meterFits, meterTest, METER_LUA } from './meter.lua'

/**
 * gcra's Lua, mirroring gcra.ts. One source for both script families: the generic module and
 * the flat body below are built from the same fragments, which read `sa` (the TAT's
 * remainder), `sb` (the TAT, ms), `now` and `limit`.
 * Redis state: one string, the pair (tatRemainder, tatMs) as an int64 (see encode_pair),
 * expiring at the theoretical arrival time.
 */

/**
 * The backlog at `now` (x window, never below 0): how far the TAT is ahead of now. A TAT behind
 * now leaves none (its remainder is below limit), and the product is formed only ahead of it:
 * a new key's TAT is 0, and 1.7 x 10^12 ms times a limit of millions passes 2^63, where Lua
 * 5.4's integers (Dragonfly) wrap.
 */
const GCRA_BACKLOG = `local backlog = 0
if sb >= now then backlog = (sb - now) * limit + sa end
`

/** The TAT (`tat`, `rem`) of a backlog `after` (all zeros when it is empty). */
const GCRA_SET = `local tat, rem = 0, 0
if after > 0 then
  tat = now + floor(after / limit)
  rem = after % limit
end
`

/** When the state is empty again: the TAT, rounded up to whole ms (core's tatExpiry). */
const GCRA_EXPIRY = `local expires_at = 0
if tat > 0 or rem > 0 then
  expires_at = tat
  if rem > 0 then expires_at = tat + 1 end
end
`

const GCRA = `
local gcra = {}
ALG.gc = gcra

local function gcra_backlog(s, now, p)
  local sa, sb, limit = s[1], s[0], p.limit
  ${GCRA_BACKLOG}
  return backlog
end

local function gcra_set(s, now, p, after)
  local limit = p.limit
  ${GCRA_SET}
  s[0] = tat
  s[1] = rem
end

function gcra.load(key)
  local rem, tat = load_pair(key, true)
  return { [0] = tat, rem }
end

function gcra.look(s, now, p, cost)
  local limit, window, burst, maxd = p.limit, p.window, p.burst, MAXD
  local backlog = gcra_backlog(s, now, p)
  return ${meterFits(false)}, backlog
end

function gcra.apply(s, now, p, cost)
  gcra_set(s, now, p, gcra_backlog(s, now, p) + cost * p.window)
end

function gcra.refund(s, now, p, cost, at)
  gcra_set(s, now, p, gcra_backlog(s, now, p) - cost * p.window)
end

function gcra.penalize(s, now, p, cost)
  gcra_set(s, now, p, penalized(gcra_backlog(s, now, p), p, cost))
end

function gcra.save(key, s, now, p)
  local tat, rem = s[0], s[1]
  ${GCRA_EXPIRY}
  save_pair(key, rem, tat, expires_at, now, true)
end
`

export const gcraLua: LuaFragments = {
  module: GCRA,
  shared: METER_LUA,
  swapped: true,
  flat: (frame) => `
-- sa = tat remainder, sb = tat (ms)
${GCRA_BACKLOG}${refundBranch(
    frame,
    `local after = backlog - cost * window
  ${GCRA_SET}  ${GCRA_EXPIRY}  ${frame.save('rem', 'tat', 'expires_at')}`,
  )}${meterTest(false, frame)}
local after = backlog + cost * window
${GCRA_SET}${GCRA_EXPIRY}${frame.save('rem', 'tat', 'expires_at')}
return backlog
`,
  steps: (frame) => ({
    read: '',
    refund: `${GCRA_BACKLOG}local after = backlog - cost * window
${GCRA_SET}${GCRA_EXPIRY}${frame.save('rem', 'tat', 'expires_at')}`,
    look: `${GCRA_BACKLOG}local reply, fits = backlog, ${flatMeterFits(false, frame)}
`,
    apply: `local after = backlog + cost * window
${GCRA_SET}${GCRA_EXPIRY}${frame.save('rem', 'tat', 'expires_at')}`,
  }),
}
