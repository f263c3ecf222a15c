// The adapters' options are declared once (HTTP_OPTIONS), and the rules limiter's
// (RULES_LIMITER_OPTIONS): names, JSDoc and docs/ agree
// (testkit), and an undeclared name is refused, naming it and its value.
import { join } from 'node:path'
import { testDeclaredOptions } from '@sluice/testkit'
import { createHttpLimiter, HTTP_OPTIONS } from '@sluice/http'
import { RULES_LIMITER_OPTIONS } from '../src/rules/limiter'

testDeclaredOptions(HTTP_OPTIONS, [[join(__dirname, '..', 'src', 'types.ts'), 'HttpLimitOptions']])

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
