// express-rate-limit's options are declared once: names, JSDoc and docs/ agree (testkit), and
// the defaults and checks the compatibility entry applies come from that declaration.
import { join } from 'node:path'
import { testDeclaredOptions } from '@sluice/testkit'
import { EXPRESS_RATE_LIMIT_OPTIONS } from '../../src/compat/declared-options'
import { resolveCompatOptions } from '../../src/compat/options'

testDeclaredOptions(EXPRESS_RATE_LIMIT_OPTIONS, [
  [join(__dirname, '..', '..', 'src', 'compat', 'types.ts'), 'Options'],
])

test("express-rate-limit's defaults come from the declaration, frozen", () => {
  const settled = EXPRESS_RATE_LIMIT_OPTIONS.resolve({} as never)
  expect(Object.isFrozen(settled)).toBe(true)
  expect(settled).toMatchObject({
    windowMs: 60_000,
    limit: 5,
    statusCode: 429,
    requestPropertyName: 'rateLimit',
    passOnStoreError: false,
  })
  const { options } = resolveCompatOptions({})
  expect(options).toMatchObject({ windowMs: 60_000, limit: 5, statusCode: 429, ipv6Subnet: 56 })
})

test('a declared check names the option and the value', () => {
  expect(() => resolveCompatOptions({ requestPropertyName: '' })).toThrow(
    '`requestPropertyName` must be a non-empty string; got ""',
  )
  expect(() => resolveCompatOptions({ handler: 1 as never })).toThrow(
    '`handler` must be a function; got 1',
  )
})

test('an unknown name is warned about, naming it, and ignored', () => {
  const warned: unknown[] = []
  const logger = { error: () => {}, warn: (error: unknown) => warned.push(error) }
  resolveCompatOptions({ windowMS: 1000, logger } as never)
  expect(warned.map((error) => (error as Error).message)).toEqual(['unknown option `windowMS`'])
})
