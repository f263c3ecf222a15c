// The adapters' options are declared once (HTTP_OPTIONS): names, JSDoc and docs/ agree
// (testkit), and an undeclared name is refused, naming it and its value.
import { join } from 'node:path'
import { testDeclaredOptions } from '@sluice/testkit'
import { createHttpLimiter, HTTP_OPTIONS } from '@sluice/http'

testDeclaredOptions(HTTP_OPTIONS, [[join(__dirname, '..', 'src', 'types.ts'), 'HttpLimitOptions']])

test('a name the adapters do not declare is refused, naming it and its value', () => {
  expect(() =>
    createHttpLimiter({ limit: 1, lmit: 2 } as never, { framework: 'Test', resetStyle: 'delta' }),
  ).toThrow('unknown option `lmit` for Test rateLimit (value 2)')
})
