// DurableObjectStore's options are declared once: names, JSDoc and docs/ agree (testkit), null
// takes a declared default as before, and each check names the option and the value.
import { join } from 'node:path'
import { ConfigError } from '@sluice/core'
import { BlockCache } from '@sluice/core/adapter'
import { testDeclaredOptions } from '@sluice/testkit'
import { DURABLE_OBJECT_OPTIONS, resolveDurableObjectOptions } from '../src/options'

testDeclaredOptions(DURABLE_OBJECT_OPTIONS, [
  [join(__dirname, '..', 'src', 'options.ts'), 'DurableObjectStoreOptions'],
])

const namespace = {
  idFromName: () => ({}),
  get: () => ({ fetch: () => Promise.resolve(new Response()) }),
}

test('DurableObjectStore options resolve to the declared defaults, frozen', () => {
  const settings = DURABLE_OBJECT_OPTIONS.resolve({ namespace, time: null as never })
  expect(Object.isFrozen(settings)).toBe(true)
  expect(settings).toEqual({
    namespace,
    objects: 32,
    name: 'sluice',
    time: 'object',
    blockCache: {},
  })
})

test.each([
  [{ objects: 0 }, '`objects` must be a whole number from 1 to 65536; got 0'],
  [{ objects: 2 ** 40 }, '`objects` must be a whole number from 1 to 65536; got 1099511627776'],
  [{ objects: 2.5 }, '`objects` must be a whole number from 1 to 65536; got 2.5'],
  [{ name: '' }, '`name` must be a non-empty string; got ""'],
  [{ time: 'server' }, "`time` must be 'object' or 'client'; got \"server\""],
  [{ blockCache: true }, '`blockCache` must be false or { maxKeys }; got true'],
  [{ blockCache: { maxKeys: -1 } }, '`blockCache.maxKeys` must be a positive integer; got -1'],
  [{ blockCache: { maxKey: 5 } }, 'unknown option `maxKey` for DurableObjectStore `blockCache`'],
  [{ object: 2 }, 'unknown option `object` for DurableObjectStore (value 2)'],
])('%j is a ConfigError naming the option and the value', (options, message) => {
  const resolve = (): unknown => resolveDurableObjectOptions({ namespace, ...options } as never)
  expect(resolve).toThrow(ConfigError)
  expect(resolve).toThrow(message)
})

test('blockCache: false turns the cache off; { maxKeys } sizes it', () => {
  expect(resolveDurableObjectOptions({ namespace, blockCache: false }).cache).toBeUndefined()
  expect(resolveDurableObjectOptions({ namespace }).cache).toBeInstanceOf(BlockCache)
})
