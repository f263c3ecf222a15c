/**
 * token-bucket's Lua (and, with shaping, leaky-bucket's), mirroring token-bucket.ts. One source
 * for both script families: the generic module and the flat body below are built from the
 * same fragments, which read `sa` (the backlog: missing x windowMs), `sb` (the last refill),
 * `now` and `limit`.
 * Redis state: one string, the pair (missing x windowMs, lastRefill), expiring when the bucket
 * is full again.
 */
import { refundBranch, type LuaFragments } from './lua'
import { flatMeterFits, meterFits, meterTest, METER_LUA } from './meter.lua'

/**
 * The `level` the backlog has drained to at `now`, and the refill time `last` it is as of.
 * Whether it drained to 0 is tested by division, exact below 2^52 (the quotient's rounding
 * cannot cross a whole ms there), and the drain formed only below the level: a new key's last
 * refill is 0, and 1.7 x 10^12 ms times a limit of millions passes 2^63, where Lua 5.4's
 * integers (Dragonfly) wrap.
 */
const BUCKET_DRAINED = `local level = sa
if now > sb then
  local elapsed = now - sb
  if elapsed < sa / limit then
    level = sa - elapsed * limit
    if level < 0 then level = 0 end
  else
    level = 0
  end
end
local last = sb
if now > last then last = now end
`

/** When the bucket is full again (0: it is). */
const BUCKET_EXPIRY = `local expires_at = 0
if level > 0 then expires_at = last + ceil(level / limit) end
`

function bucketModule(code: 'tb' | 'lb', shaping: boolean): string {
  const name = code === 'tb' ? 'token_bucket' : 'leaky_bucket'
  return `
local ${name} = {}
ALG.${code} = ${name}

function ${name}.load(key)
  local level, last = load_pair(key, false)
  return { [0] = level, last }
end

local function ${name}_drained(s, now, p)
  local sa, sb, limit = s[0], s[1], p.limit
  ${BUCKET_DRAINED}
  return level, last
end

function ${name}.look(s, now, p, cost)
  local limit, window, burst, maxd = p.limit, p.window, p.burst, MAXD
  local backlog = ${name}_drained(s, now, p)
  return ${meterFits(shaping)}, backlog
end

function ${name}.apply(s, now, p, cost)
  local level, last = ${name}_drained(s, now, p)
  s[0] = level + cost * p.window
  s[1] = last
end

function ${name}.refund(s, now, p, cost, at)
  local level, last = ${name}_drained(s, now, p)
  s[0] = max(0, level - cost * p.window)
  s[1] = last
end

function ${name}.penalize(s, now, p, cost)
  local level, last = ${name}_drained(s, now, p)
  s[0] = penalized(level, p, cost)
  s[1] = last
end

function ${name}.save(key, s, now, p)
  local level, last, limit = s[0], s[1], p.limit
  ${BUCKET_EXPIRY}
  save_pair(key, level, last, expires_at, now, false)
end
`
}

/** A bucket's fragments: token-bucket's (code `tb`), or with shaping leaky-bucket's (`lb`). */
export function bucketLua(code: 'tb' | 'lb', shaping: boolean): LuaFragments {
  return {
    module: bucketModule(code, shaping),
    shared: METER_LUA,
    flat: (frame) => `
${BUCKET_DRAINED}${refundBranch(
      frame,
      `level = level - cost * window
  if level < 0 then level = 0 end
  ${BUCKET_EXPIRY}  ${frame.save('level', 'last', 'expires_at')}`,
    )}local backlog = level
${meterTest(shaping, frame)}
level = backlog + cost * window
${BUCKET_EXPIRY}${frame.save('level', 'last', 'expires_at')}
return backlog
`,
    steps: (frame) => ({
      read: '',
      refund: `${BUCKET_DRAINED}level = level - cost * window
if level < 0 then level = 0 end
${BUCKET_EXPIRY}${frame.save('level', 'last', 'expires_at')}`,
      look: `${BUCKET_DRAINED}local backlog = level
local reply, fits = backlog, ${flatMeterFits(shaping, frame)}
`,
      apply: `level = backlog + cost * window
${BUCKET_EXPIRY}${frame.save('level', 'last', 'expires_at')}`,
    }),
  }
}

export const tokenBucketLua = bucketLua('tb', false)
