/**
 * Owns the flat scripts of the meters (gcra, token-bucket, leaky-bucket): the admission test
 * on the backlog, and the state written back.
 */
import { tail, head, save, type BakedPolicy } from './frame'

/**
 * The admission test of decide_meter (meter.ts) on `backlog`, with reservations (`maxd`,
 * maxDelayMs) as there. The reply is `backlog` alone: every field of the outcome is a function
 * of it, the policy, the cost and maxDelayMs, which the store computes with core's formulas
 * (flat-outcome.ts). Peek, a rejection and a cost-0 consume return here; an admitted consume
 * falls through with `need` set.
 */
function meterTest(shaping: boolean): string {
  return `
local need = cost * window
if cost > burst or op == 'p' or cost == 0 then return backlog end
if maxd > 0 then
  ${shaping ? 'if backlog > maxd * limit then return backlog end' : 'if backlog + need - burst * window > maxd * limit then return backlog end'}
elseif backlog + need > burst * window then
  return backlog
end
`
}

export const gcraFlat = (baked?: BakedPolicy, batch = false): string => `${head('gc', baked, batch)}
-- sa = tat remainder, sb = tat (ms)
local backlog = (sb - now) * limit + sa
if backlog < 0 then backlog = 0 end
if op == 'r' then
  local after = backlog - cost * window
  local tat, rem = 0, 0
  if after > 0 then
    tat = now + floor(after / limit)
    rem = after % limit
  end
  local expires_at = 0
  if tat > 0 then
    expires_at = tat
    if rem > 0 then expires_at = tat + 1 end
  end
  ${save('rem', 'tat', 'expires_at')}
  return nil
end
${meterTest(false)}
local after = backlog + need
local tat, rem = now + floor(after / limit), after % limit
local expires_at = tat
if rem > 0 then expires_at = tat + 1 end
${save('rem', 'tat', 'expires_at')}
return backlog
${tail('gc', batch)}`

/** token-bucket and leaky-bucket (shaping): sa = level (missing x windowMs), sb = last refill. */
export function bucketFlat(code: 'tb' | 'lb', baked?: BakedPolicy, batch = false): string {
  return `${head(code, baked, batch)}
local level = sa
if now > sb then
  level = sa - (now - sb) * limit
  if level < 0 then level = 0 end
end
local last = sb
if now > last then last = now end
if op == 'r' then
  level = level - cost * window
  if level < 0 then level = 0 end
  local expires_at = 0
  if level > 0 then expires_at = last + ceil(level / limit) end
  ${save('level', 'last', 'expires_at')}
  return nil
end
local backlog = level
${meterTest(code === 'lb')}
level = backlog + need
local expires_at = 0
if level > 0 then expires_at = last + ceil(level / limit) end
${save('level', 'last', 'expires_at')}
return backlog
${tail(code, batch)}`
}
