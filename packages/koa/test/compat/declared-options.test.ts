// koa-ratelimit's options are declared once: names, JSDoc and docs/ agree (testkit).
import { join } from 'node:path'
import { testDeclaredOptions } from '@sluice/testkit'
import { RATELIMIT_OPTIONS } from '../../src/compat/options'

testDeclaredOptions(RATELIMIT_OPTIONS, [
  [join(__dirname, '..', '..', 'src', 'compat', 'options.ts'), 'RatelimitOptions'],
])

test("koa-ratelimit's defaults come from the declaration", () => {
  expect(RATELIMIT_OPTIONS.resolve({})).toMatchObject({
    duration: 3_600_000,
    max: 2500,
    namespace: 'limit',
    status: 429,
    throw: false,
    disableHeader: false,
  })
})
