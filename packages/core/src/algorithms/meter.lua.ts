import { peekOr, type LuaFrame } from './lua'

/**
 * The meters' shared Lua (token-bucket, leaky-bucket, gcra), mirroring meter.ts: a backlog
 * multiplied by the window, which drains by exactly `limit` per ms. The admission test is one
 * fragment for the generic modules and the flat bodies alike; it reads `backlog`, `cost`,
 * `limit`, `window`, `burst` and `maxd` (maxDelayMs: reservations).
 */
/**
 * Whether a request of `cost` fits the backlog: core's decideMeter admission, reservations as
 * there (shaping holds up to maxDelayMs of backlog; the others may run up to it past the
 * capacity). A cost-0 request is never applied, so its answer does not matter. The wait is
 * compared by division (exact below 2^52): maxDelayMs x limit may pass 2^63, where Lua 5.4's
 * integers wrap.
 */
export function meterFits(shaping: boolean): string {
  const ahead = shaping ? 'backlog' : 'backlog + cost * window - burst * window'
  return `cost <= burst and (maxd > 0 and (${ahead}) / limit <= maxd or maxd <= 0 and backlog + cost * window <= burst * window)`
}

/** meterFits in a flat body: a batch reserves nothing (its maxd is 0), the capacity's test alone. */
export const flatMeterFits = (shaping: boolean, frame: LuaFrame): string =>
  frame.batch ? 'cost <= burst and backlog + cost * window <= burst * window' : meterFits(shaping)

export const METER_LUA = `
-- The backlog after a penalty: raised by cost x window, never past the capacity (core: penalized).
local function penalized(backlog, p, cost)
  local raised = min(p.burst * p.window, backlog + cost * p.window)
  if raised > backlog then return raised end
  return backlog
end
`

/**
 * The admission test (meterFits) on `backlog`. The reply is `backlog` alone: every field of
 * the outcome is a function of it, the policy, the cost and maxDelayMs, which the store
 * computes with core's formulas (@sluice/redis flat-outcome.ts). Peek, a rejection and a cost-0 consume
 * return here; an admitted consume falls through.
 */
export function meterTest(shaping: boolean, frame: LuaFrame): string {
  return `
if ${peekOr(frame)}cost == 0 or not (${flatMeterFits(shaping, frame)}) then return backlog end
`
}
