/**
 * token-bucket (and, with shaping, leaky-bucket), mirroring core's algorithms/token-bucket.ts.
 * Needs METER. Redis state: one string, the pair (missing x windowMs, lastRefill), expiring
 * when the bucket is full again.
 */
export function bucketLua(code: 'tb' | 'lb', shaping: boolean): string {
  const name = code === 'tb' ? 'token_bucket' : 'leaky_bucket'
  return `
local ${name} = {}
ALG.${code} = ${name}

function ${name}.load(key)
  local level, last = decode_pair(call('GET', key))
  return { [0] = level, last }
end

function ${name}.look(s, now, p, cost)
  local backlog = drained(s[0], s[1], now, p)
  return meter_fits(backlog, p, cost, ${shaping}), backlog
end

function ${name}.apply(s, now, p, cost)
  s[0] = drained(s[0], s[1], now, p) + cost * p.window
  s[1] = max(now, s[1])
end

function ${name}.refund(s, now, p, cost, at)
  s[0] = max(0, drained(s[0], s[1], now, p) - cost * p.window)
  s[1] = max(now, s[1])
end

function ${name}.penalize(s, now, p, cost)
  s[0] = penalized(drained(s[0], s[1], now, p), p, cost)
  s[1] = max(now, s[1])
end

function ${name}.save(key, s, now, p)
  local expires_at = 0
  if s[0] > 0 then expires_at = s[1] + ceil(s[0] / p.limit) end
  save_pair(key, s[0], s[1], expires_at, now)
end
`
}

export const TOKEN_BUCKET = bucketLua('tb', false)
