/**
 * Owns the flat scripts of the meters (gcra, token-bucket, leaky-bucket): the admission test
 * on the backlog, and the state written back, built from the same fragments as the generic
 * modules (gcra.ts, token-bucket.ts, meter.ts).
 */
import { BUCKET_DRAINED, BUCKET_EXPIRY } from '../token-bucket'
import { GCRA_BACKLOG, GCRA_EXPIRY, GCRA_SET } from '../gcra'
import { meterFits } from '../meter'
import { tail, head, save, type BakedPolicy } from './frame'

/**
 * The admission test (meterFits) on `backlog`. The reply is `backlog` alone: every field of
 * the outcome is a function of it, the policy, the cost and maxDelayMs, which the store
 * computes with core's formulas (flat-outcome.ts). Peek, a rejection and a cost-0 consume
 * return here; an admitted consume falls through.
 */
function meterTest(shaping: boolean): string {
  return `
if op == 'p' or cost == 0 or not (${meterFits(shaping)}) then return backlog end
`
}

export const gcraFlat = (
  baked?: BakedPolicy,
  batch = false,
  packed = false,
): string => `${head('gc', baked, batch, packed)}
-- sa = tat remainder, sb = tat (ms)
${GCRA_BACKLOG}if op == 'r' then
  local after = backlog - cost * window
  ${GCRA_SET}  ${GCRA_EXPIRY}  ${save('rem', 'tat', 'expires_at', packed)}
  return nil
end
${meterTest(false)}
local after = backlog + cost * window
${GCRA_SET}${GCRA_EXPIRY}${save('rem', 'tat', 'expires_at', packed)}
return backlog
${tail('gc', batch, packed)}`

/** token-bucket and leaky-bucket (shaping): sa = level (missing x windowMs), sb = last refill. */
export function bucketFlat(
  code: 'tb' | 'lb',
  baked?: BakedPolicy,
  batch = false,
  packed = false,
): string {
  return `${head(code, baked, batch, packed)}
${BUCKET_DRAINED}if op == 'r' then
  level = level - cost * window
  if level < 0 then level = 0 end
  ${BUCKET_EXPIRY}  ${save('level', 'last', 'expires_at', packed)}
  return nil
end
local backlog = level
${meterTest(code === 'lb')}
level = backlog + cost * window
${BUCKET_EXPIRY}${save('level', 'last', 'expires_at', packed)}
return backlog
${tail(code, batch, packed)}`
}
