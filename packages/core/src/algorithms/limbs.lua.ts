/**
 * Exact integers past 2^53 in Lua, for the wide meters' scripts (`<algorithm>.wide.lua.ts`):
 * Lua's numbers are doubles, so a wide backlog (10^12 tokens a month is 2.7 x 10^21 backlog
 * units) is held as five limbs of 24 bits, lowest first: value = sum of limb[i] x 2^(24(i-1)).
 * Limbs 1 to 4 are in [0, 2^24); the fifth carries the sign, so a difference may go below 0.
 * Every number a step forms stays below 2^53 (a limb product is below 2^48, a column sum of
 * three below 2^50), and splitting at a power of two divides exactly, so every step is exact.
 * core's BigInt transitions (meter.ts) are the reference: @sluice/redis test/wide-script.test.ts runs these
 * on a real Redis against BigInt at the edges (2^53 +- 1, 10^12 budgets, carries).
 */

/**
 * Lua that splits the integer `v` (in [0, 2^53)) into its three limbs `v1`, `v2`, `v3`,
 * lowest first, as locals (inline: a function call per split would cost each operation more).
 */
function split(v: string): string {
  return `  local ${v}1 = ${v} % LB
  ${v} = (${v} - ${v}1) / LB
  local ${v}2 = ${v} % LB
  local ${v}3 = (${v} - ${v}2) / LB
`
}

/**
 * Defines `w_of(a)`, `w_mul(a, b)` (a, b integers in [0, 2^53)), `w_muladd(a, b, c)` (a x b + c),
 * `w_submul(x, a, b)` (x - a x b), `w_add`, `w_sub`, `w_cmp`,
 * `w_neg(x)` (x < 0), `w_num(x)` (exact below 2^53, the nearest double past it), `w_div(x, d)`
 * (x >= 0, d in (0, 2^53), the quotient below 2^53: quotient and remainder as numbers). A
 * script replies a wide value as its five limbs (an array of integers).
 */
export const LIMBS_LUA = `
local LB = 16777216
local W0 = { 0, 0, 0, 0, 0 }

-- Carries every column into the next: limbs 1 to 4 in [0, LB), the fifth signed.
local function w_norm(c1, c2, c3, c4, c5)
  -- Most sums and differences carry nothing: no division then.
  if c1 >= 0 and c1 < LB and c2 >= 0 and c2 < LB and c3 >= 0 and c3 < LB and c4 >= 0 and c4 < LB then
    return { c1, c2, c3, c4, c5 }
  end
  local k = floor(c1 / LB)
  c1 = c1 - k * LB
  c2 = c2 + k
  k = floor(c2 / LB)
  c2 = c2 - k * LB
  c3 = c3 + k
  k = floor(c3 / LB)
  c3 = c3 - k * LB
  c4 = c4 + k
  k = floor(c4 / LB)
  return { c1, c2, c3, c4 - k * LB, c5 + k }
end

local function w_of(a)
${split('a')}  return { a1, a2, a3, 0, 0 }
end

local function w_mul(a, b)
${split('a')}${split('b')}  return w_norm(a1 * b1, a1 * b2 + a2 * b1, a1 * b3 + a2 * b2 + a3 * b1, a2 * b3 + a3 * b2, a3 * b3)
end

-- a x b + c in one carry pass (a, b, c integers in [0, 2^53)): a column stays below 2^51.
local function w_muladd(a, b, c)
${split('a')}${split('b')}${split('c')}  return w_norm(a1 * b1 + c1, a1 * b2 + a2 * b1 + c2, a1 * b3 + a2 * b2 + a3 * b1 + c3, a2 * b3 + a3 * b2, a3 * b3)
end

-- x - a x b in one carry pass (a, b integers in [0, 2^53)).
local function w_submul(x, a, b)
${split('a')}${split('b')}  return w_norm(x[1] - a1 * b1, x[2] - a1 * b2 - a2 * b1, x[3] - a1 * b3 - a2 * b2 - a3 * b1, x[4] - a2 * b3 - a3 * b2, x[5] - a3 * b3)
end

local function w_add(x, y)
  return w_norm(x[1] + y[1], x[2] + y[2], x[3] + y[3], x[4] + y[4], x[5] + y[5])
end

local function w_sub(x, y)
  return w_norm(x[1] - y[1], x[2] - y[2], x[3] - y[3], x[4] - y[4], x[5] - y[5])
end

-- -1, 0 or 1 as x is below, at or above y.
local function w_cmp(x, y)
  for i = 5, 1, -1 do
    if x[i] ~= y[i] then
      if x[i] < y[i] then return -1 end
      return 1
    end
  end
  return 0
end

local function w_neg(x)
  return x[5] < 0
end

local function w_num(x)
  return (((x[5] * LB + x[4]) * LB + x[3]) * LB + x[2]) * LB + x[1]
end

-- floor(x / d) and the remainder: the double quotient is within a few units of the true one,
-- which the exact remainder then corrects.
local function w_div(x, d)
  local q = floor(w_num(x) / d)
  local r = w_submul(x, q, d)
  -- Below 2^53 (limbs 4 and 5 zero, limb 3 below 2^5) r is exact as a number: compared to d
  -- without building d's limbs; at or past it, r is past d.
  local fits = r[5] == 0 and r[4] == 0 and r[3] < 32 and w_num(r) < d
  if not fits then
    local dd = w_of(d)
    while w_neg(r) do
      q = q - 1
      r = w_add(r, dd)
    end
    while w_cmp(r, dd) >= 0 do
      q = q + 1
      r = w_sub(r, dd)
    end
  end
  return q, w_num(r)
end
`
