// MemcachedStore's options are declared once: names, JSDoc and docs/ agree (testkit), null takes
// a declared default as before, and each check names the option and the value.
import { join } from 'node:path'
import { ConfigError } from '@sluice/core'
import { testDeclaredOptions } from '@sluice/testkit'
import { MEMCACHED_OPTIONS } from '../src/options'

const OPTIONS_FILE = join(__dirname, '..', 'src', 'options.ts')

testDeclaredOptions(MEMCACHED_OPTIONS, [
  [OPTIONS_FILE, 'CommonOptions'],
  [OPTIONS_FILE, 'MemcachedClientStoreOptions'],
  [OPTIONS_FILE, 'MemcachedServersStoreOptions'],
])

test('MemcachedStore options resolve to the declared defaults, frozen', () => {
  const settings = MEMCACHED_OPTIONS.resolve({ servers: 'localhost:1', prefix: null as never })
  expect(Object.isFrozen(settings)).toBe(true)
  expect(settings).toEqual({
    client: undefined,
    servers: 'localhost:1',
    clientOptions: { timeout: 0.5, conntimeout: 1, keepAlive: true, retries: 0 },
    prefix: 'sluice',
    casAttempts: 10,
  })
})

test.each([
  [{ servers: ' ' }, '`servers` must be a non-empty "host:port,host:port" string; got " "'],
  [{ client: null }, '`client` must be a memjs Client; got null'],
  [{ servers: 'h:1', casAttempts: 1.5 }, '`casAttempts` must be a positive integer; got 1.5'],
  [{ servers: 'h:1', clientOptions: 'fast' }, '`clientOptions` must be an object; got "fast"'],
])('%j is a ConfigError naming the option and the value', (options, message) => {
  const resolve = (): unknown => MEMCACHED_OPTIONS.resolve(options as never)
  expect(resolve).toThrow(ConfigError)
  expect(resolve).toThrow(message)
})
