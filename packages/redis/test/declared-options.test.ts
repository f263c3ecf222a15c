// RedisStore's options are declared once: names, JSDoc and docs/ agree (testkit), and null takes
// a declared default as before.
import { join } from 'node:path'
import { testDeclaredOptions } from '@sluice/testkit'
import { REDIS_OPTIONS } from '../src/options'

testDeclaredOptions(REDIS_OPTIONS, [
  [join(__dirname, '..', 'src', 'options.ts'), 'RedisStoreOptions'],
])

test('RedisStore options resolve to the declared defaults, frozen', () => {
  const client = {}
  const settings = REDIS_OPTIONS.resolve({ client: client as never, packed: null as never })
  expect(Object.isFrozen(settings)).toBe(true)
  expect(settings).toEqual({
    client,
    time: 'server',
    clockToleranceMs: 1000,
    blockCache: {},
    policyScripts: 100,
    batchSize: 32,
    packed: false,
    prefix: 'sluice',
  })
  expect(() => REDIS_OPTIONS.resolve({ client: client as never, batchSize: 0 })).toThrow(
    '`batchSize` must be a positive integer; got 0',
  )
})
