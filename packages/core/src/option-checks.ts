/**
 * Owns the checks options share, written once: each layer's declaration (declareOptions) and
 * resolver use these. Each throws a ConfigError naming the option and the value; `what` words
 * the expectation when the option's own words are clearer than the generic ones. The numeric
 * checks also take `fail`, for the limiter's call arguments (checks.ts), which throw their own
 * error in the same words.
 */
import { invalidOption } from './errors'

/** Throws the error of a failed check: `option` must be `expected`, got the value. */
export type CheckFailure = (option: string, value: unknown, expected: string) => never

/** `names` for a message: `a, b or c` (or `and`), each wrapped in `quote`. */
export function listNames(names: readonly string[], quote = '', conjunction = 'or'): string {
  const quoted = names.map((name) => `${quote}${name}${quote}`)
  return quoted.length < 2
    ? quoted.join('')
    : `${quoted.slice(0, -1).join(', ')} ${conjunction} ${quoted.at(-1)}`
}

/** Throws unless `value` is a safe integer of at least `min`. */
function checkInteger(
  value: unknown,
  option: string,
  min: number,
  what: string,
  fail: CheckFailure,
): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) {
    fail(option, value, what)
  }
  return value
}

/** Throws unless `value` is a positive safe integer. */
export function checkPositiveInteger(
  value: unknown,
  option: string,
  what = 'a positive integer',
  fail: CheckFailure = invalidOption,
): number {
  return checkInteger(value, option, 1, what, fail)
}

/** Throws unless `value` is a safe integer >= 0. */
export function checkWholeNumber(
  value: unknown,
  option: string,
  what = 'a whole number >= 0',
  fail: CheckFailure = invalidOption,
): number {
  return checkInteger(value, option, 0, what, fail)
}

/** Throws unless `value` is a finite number above 0 (or >= 0 with `orZero`). */
export function checkFiniteNumber(
  value: unknown,
  option: string,
  what: string,
  orZero = false,
  fail: CheckFailure = invalidOption,
): number {
  if (
    typeof value !== 'number' ||
    !Number.isFinite(value) ||
    value < 0 ||
    (!orZero && value === 0)
  ) {
    fail(option, value, what)
  }
  return value
}

/** Throws unless `value` is a function or undefined. */
export function checkFunction(value: unknown, option: string): void {
  if (value !== undefined && typeof value !== 'function') invalidOption(option, value, 'a function')
}

/** `value` as a boolean (undefined is false); anything else throws. */
export function checkBoolean(value: unknown, option: string): boolean {
  if (value === undefined) return false
  if (typeof value !== 'boolean') invalidOption(option, value, 'true or false')
  return value
}

/** Throws unless `value` is one of `choices`, which the message lists, quoted. */
export function checkOneOf<T extends string>(
  value: unknown,
  option: string,
  choices: readonly T[],
): T {
  if (!choices.includes(value as T)) invalidOption(option, value, listNames(choices, "'"))
  return value as T
}
