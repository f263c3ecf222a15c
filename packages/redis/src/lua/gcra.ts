/**
 * gcra, mirroring core's algorithms/gcra.ts. Needs METER.
 * Redis state: one string, the pair (tatRemainder, tatMs) as an int64 (see encode_pair),
 * expiring at the theoretical arrival time.
 */
export const GCRA = `
local gcra = {}
ALG.gc = gcra

local function gcra_backlog(s, now, p)
  local ahead = (s[0] - now) * p.limit + s[1]
  if ahead > 0 then return ahead end
  return 0
end

local function gcra_set(s, now, p, backlog_after)
  if backlog_after <= 0 then
    s[0] = 0
    s[1] = 0
    return
  end
  s[0] = now + floor(backlog_after / p.limit)
  s[1] = backlog_after % p.limit
end

function gcra.load(key)
  local rem, tat = decode_pair(call('GET', key))
  return { [0] = tat, rem }
end

function gcra.look(s, now, p, cost)
  local backlog = gcra_backlog(s, now, p)
  return meter_fits(backlog, p, cost, false), backlog
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
  local expires_at = 0
  if s[0] > 0 then
    expires_at = s[0]
    if s[1] > 0 then expires_at = expires_at + 1 end
  end
  save_pair(key, s[1], s[0], expires_at, now)
end
`
