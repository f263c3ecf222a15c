// PostgresStore's options are declared once: names, JSDoc and docs/ agree (testkit), null takes
// a declared default as before, and each check names the option and the value.
import { join } from 'node:path'
import { ConfigError } from '@sluice/core'
import { testDeclaredOptions } from '@sluice/testkit'
import { POSTGRES_OPTIONS } from '../src/options'

testDeclaredOptions(POSTGRES_OPTIONS, [
  [join(__dirname, '..', 'src', 'options.ts'), 'PostgresStoreOptions'],
])

test('PostgresStore options resolve to the declared defaults, frozen', () => {
  const client = {}
  const settings = POSTGRES_OPTIONS.resolve({ client: client as never, time: null as never })
  expect(Object.isFrozen(settings)).toBe(true)
  expect(settings).toEqual({
    client,
    table: 'sluice_limits',
    schema: 'public',
    time: 'server',
    batchSize: 256,
    concurrency: 4,
    casAttempts: 2,
    sweepIntervalMs: 60_000,
    sweepRows: 1000,
    unlogged: false,
  })
})

test.each([
  [{ casAttempts: -1 }, '`casAttempts` must be an integer, 0 or more; got -1'],
  [{ sweepIntervalMs: 0 }, '`sweepIntervalMs` must be a positive integer; got 0'],
  [{ sweepRows: 1.5 }, '`sweepRows` must be a positive integer; got 1.5'],
  [{ sweepIntervalMs: 2 ** 31 }, '`sweepIntervalMs` must be at most 2147483647'],
  [{ sweepRows: 2 ** 31 }, '`sweepRows` must be at most 2147483647'],
  [{ concurrency: '4' }, '`concurrency` must be a positive integer; got "4"'],
  [{ unlogged: 'yes' }, '`unlogged` must be true or false; got "yes"'],
  [{ schema: 'x'.repeat(64) }, '`schema` must be at most 63 bytes'],
])('%j is a ConfigError naming the option and the value', (options, message) => {
  const resolve = (): unknown => POSTGRES_OPTIONS.resolve({ client: {}, ...options } as never)
  expect(resolve).toThrow(ConfigError)
  expect(resolve).toThrow(message)
})

test('sweepIntervalMs: false is taken as given', () => {
  expect(POSTGRES_OPTIONS.resolve({ client: {} as never, sweepIntervalMs: false })).toMatchObject({
    sweepIntervalMs: false,
  })
})
