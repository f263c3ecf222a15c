/**
 * What the meters (token-bucket, leaky-bucket, gcra) share, mirroring core's algorithms/meter.ts:
 * a backlog multiplied by the window, which drains by exactly `limit` per ms. One source for
 * both script families: the admission test is a fragment the generic module below and the flat
 * scripts (flat/meters.ts) both use; it reads `backlog`, `cost`, `limit`, `window`, `burst` and
 * `maxd` (maxDelayMs: reservations).
 */

/**
 * Whether a request of `cost` fits the backlog: core's decideMeter admission, reservations as
 * there (shaping holds up to maxDelayMs of backlog; the others may run up to it past the
 * capacity). A cost-0 request is never applied, so its answer does not matter.
 */
export function meterFits(shaping: boolean): string {
  const ahead = shaping ? 'backlog' : 'backlog + cost * window - burst * window'
  return `cost <= burst and (maxd > 0 and ${ahead} <= maxd * limit or maxd <= 0 and backlog + cost * window <= burst * window)`
}

export const METER = `
-- The backlog after a penalty: raised by cost x window, never past the capacity (core: penalized).
local function penalized(backlog, p, cost)
  local raised = min(p.burst * p.window, backlog + cost * p.window)
  if raised > backlog then return raised end
  return backlog
end
`
