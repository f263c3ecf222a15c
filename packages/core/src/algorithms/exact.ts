/**
 * Owns exact integer products and quotients past what a double holds: `a x b / c` for the
 * sliding window's weighted counter, and floor and ceiling division of BigInts for the wide
 * meters (meter.ts).
 */

/**
 * Largest `capacity x window` the narrow arithmetic takes: below it every step is an exact
 * integer in a double and in Lua. Past it a policy is wide (isWide): exact BigInt arithmetic in
 * core, and stores that compute in doubles elsewhere (RedisStore's Lua) hand it to core.
 */
export const MAX_SAFE_PRODUCT = 2 ** 50

/**
 * Whether `policy` passes MAX_SAFE_PRODUCT: budgets such as 10^9 tokens a day. Its meters then
 * run their wide (BigInt) transitions; the counters need none (their products go through
 * mulDivFloor and its kin here).
 */
export function isWide(policy: { limit: number; burst: number; windowMs: number }): boolean {
  return (
    (policy.limit > policy.burst ? policy.limit : policy.burst) * policy.windowMs > MAX_SAFE_PRODUCT
  )
}

/**
 * Products up to 2^50 take the double path: there, dividing the rounded product and flooring it
 * is exact (the quotient's error stays below 1 / divisor). Past it, BigInt.
 */
const EXACT_PRODUCT = MAX_SAFE_PRODUCT

/** floor(a x b / c) for non-negative integers a, b and positive c, exact at any size. */
export function mulDivFloor(a: number, b: number, c: number): number {
  const product = a * b
  if (product <= EXACT_PRODUCT) return Math.floor(product / c)
  return Number((whole(a) * whole(b)) / whole(c))
}

/** ceil(a x b / c) for non-negative integers a, b and positive c, exact at any size. */
export function mulDivCeil(a: number, b: number, c: number): number {
  const product = a * b
  if (product <= EXACT_PRODUCT) return Math.ceil(product / c)
  return Number(ceilDiv(whole(a) * whole(b), whole(c)))
}

/** Whether a x b >= c x d, for non-negative integers, exact at any size. */
export function productAtLeast(a: number, b: number, c: number, d: number): boolean {
  const left = a * b
  const right = c * d
  if (left <= EXACT_PRODUCT && right <= EXACT_PRODUCT) return left >= right
  return whole(a) * whole(b) >= whole(c) * whole(d)
}

/**
 * A BigInt of a whole number. Every operand is one, except with a clock that reads fractions of
 * a ms (an injected one): past 2^50 those are floored rather than thrown on.
 */
function whole(x: number): bigint {
  return BigInt(Math.floor(x))
}

/** floor(a / b) for b > 0 (BigInt division truncates toward zero). */
export function floorDiv(a: bigint, b: bigint): bigint {
  const q = a / b
  return a < 0n && q * b !== a ? q - 1n : q
}

/** ceil(a / b) for b > 0. */
export function ceilDiv(a: bigint, b: bigint): bigint {
  const q = a / b
  return a > 0n && q * b !== a ? q + 1n : q
}
