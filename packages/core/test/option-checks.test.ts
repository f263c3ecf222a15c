// The checks every layer's options share: each names the option and the value it refuses.
import {
  checkBoolean,
  checkFiniteNumber,
  checkFunction,
  checkOneOf,
  checkPositiveInteger,
  checkWholeNumber,
} from '../src/option-checks'
import { checkCost, checkMs } from '../src/limiter/checks'
import { ConfigError } from '../src/errors'

test('integers: positive, or whole numbers from 0', () => {
  expect(checkPositiveInteger(3, 'limit')).toBe(3)
  expect(() => checkPositiveInteger(0, 'limit')).toThrow(
    '`limit` must be a positive integer; got 0',
  )
  expect(() => checkPositiveInteger(1.5, 'cost', 'a whole cost')).toThrow(
    '`cost` must be a whole cost; got 1.5',
  )
  expect(checkWholeNumber(0, 'ban')).toBe(0)
  expect(() => checkWholeNumber(-1, 'ban')).toThrow('`ban` must be a whole number >= 0; got -1')
  expect(() => checkWholeNumber(2 ** 53, 'ban')).toThrow('`ban` must be a whole number >= 0')
})

test('finite numbers: above 0, or from 0 when zero is allowed', () => {
  expect(checkFiniteNumber(0.5, 'windowMs', 'ms')).toBe(0.5)
  expect(() => checkFiniteNumber(0, 'windowMs', 'a positive number of ms')).toThrow(
    '`windowMs` must be a positive number of ms; got 0',
  )
  expect(checkFiniteNumber(0, 'maxDelayMs', 'ms', true)).toBe(0)
  expect(() => checkFiniteNumber(Infinity, 'maxDelayMs', 'a number of ms >= 0', true)).toThrow(
    '`maxDelayMs` must be a number of ms >= 0; got Infinity',
  )
})

test('functions, booleans and one of a list', () => {
  expect(() => checkFunction(undefined, 'skip')).not.toThrow()
  expect(() => checkFunction('no', 'skip')).toThrow('`skip` must be a function; got "no"')
  expect(checkBoolean(undefined, 'shadow')).toBe(false)
  expect(() => checkBoolean(1, 'shadow')).toThrow('`shadow` must be true or false; got 1')
  expect(checkOneOf('double', 'backoff', ['restart', 'double'])).toBe('double')
  expect(() => checkOneOf('triple', 'backoff', ['restart', 'double'])).toThrow(
    "`backoff` must be 'restart' or 'double'; got \"triple\"",
  )
})

test("a call's arguments fail with their own error in the same words (limiter/checks.ts)", () => {
  const bad = (): number => checkCost(0)
  expect(bad).toThrow('`cost` must be a positive integer; got 0')
  expect(bad).toThrow(expect.objectContaining({ code: 'ERR_SLUICE_ARGUMENT' }))
  expect(bad).not.toThrow(ConfigError)
  expect(() => checkMs(0, 'ms', false)).toThrow(
    expect.objectContaining({
      code: 'ERR_SLUICE_ARGUMENT',
      message: '`ms` must be a positive finite number of ms; got 0',
    }),
  )
  expect(checkMs(0, 'maxWaitMs', true)).toBe(0)
  expect(checkCost(2)).toBe(2)
})
