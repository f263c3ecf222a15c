// The adapters' options are declared once (HTTP_OPTIONS), and the rules limiter's
// (RULES_LIMITER_OPTIONS): names, JSDoc and docs/ agree
// (testkit), and an undeclared name is refused, naming it and its value.
import { join } from 'node:path'
import { testDeclaredOptions } from '@sluice/testkit'
import { createHttpLimiter, HTTP_OPTIONS } from '@sluice/http'
import { RULES_LIMITER_OPTIONS } from '../src/rules/limiter'
import { IP_KEY_OPTIONS } from '../src/keys'

testDeclaredOptions(HTTP_OPTIONS, [[join(__dirname, '..', 'src', 'types.ts'), 'HttpLimitOptions']])
testDeclaredOptions(IP_KEY_OPTIONS, [[join(__dirname, '..', 'src', 'keys.ts'), 'IpKeyOptions']])

test("ipKey's options resolve to their declared defaults", () => {
  expect(IP_KEY_OPTIONS.resolve({ ipv6Subnet: null as never })).toEqual({
    ipv6Subnet: 64,
    logger: console,
  })
  expect(() => IP_KEY_OPTIONS.resolve({ ipv6Subnet: 16 })).toThrow(
    '`ipv6Subnet` must be an integer from 32 to 128, or false; got 16',
  )
})

test('a name the adapters do not declare is refused, naming it and its value', () => {
  expect(() =>
    createHttpLimiter({ limit: 1, lmit: 2 } as never, { framework: 'Test', resetStyle: 'delta' }),
  ).toThrow('unknown option `lmit` for Test rateLimit (value 2)')
})

testDeclaredOptions(RULES_LIMITER_OPTIONS, [
  [join(__dirname, '..', 'src', 'rules', 'limiter.ts'), 'RulesLimiterOptions'],
])

test("the rules limiter's defaults and checks come from its declaration", () => {
  const settings = RULES_LIMITER_OPTIONS.resolve({
    rules: 'rules.yaml',
    onStoreError: null as never,
  })
  expect(Object.isFrozen(settings)).toBe(true)
  expect(settings).toMatchObject({
    onStoreError: 'throw',
    prefix: '',
    timeoutMs: 1000,
    maxInFlight: 5000,
  })
  expect(() =>
    RULES_LIMITER_OPTIONS.resolve({ rules: 'rules.yaml', onStoreError: 'ignore' as never }),
  ).toThrow("`onStoreError` must be 'throw', 'allow' or 'deny'; got \"ignore\"")
  expect(() => RULES_LIMITER_OPTIONS.resolve({ rules: 'rules.yaml', rule: 1 } as never)).toThrow(
    'unknown option `rule` for createRulesLimiter (value 1)',
  )
})
