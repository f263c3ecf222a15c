// Each layer's options are declared once (see testkit's testDeclaredOptions); what the
// declaration does at creation: unknown names, defaults, checks, a frozen result. The
// adapters' layer (HTTP_OPTIONS) is tested in @sluice/http.
import { join } from 'node:path'
import { testDeclaredOptions } from '@sluice/testkit'
import { LIMITER_OPTIONS } from '../src/limiter/settings'
import { LIMIT_OPTIONS } from '../src/options'
import { createLimiter } from '@sluice/core'

const SRC = join(__dirname, '..', 'src')

testDeclaredOptions(LIMIT_OPTIONS, [[join(SRC, 'options.ts'), 'LimitOptions']])
testDeclaredOptions(LIMITER_OPTIONS, [
  [join(SRC, 'options.ts'), 'LimitOptions'],
  [join(SRC, 'options.ts'), 'LimiterOptions'],
])

test('a name not declared is refused, naming it and its value', () => {
  expect(() => createLimiter({ limit: 1, window: 1000, brust: 2 } as never)).toThrow(
    'unknown option `brust` for createLimiter (value 2)',
  )
})

test('resolve fills in the declared defaults and freezes the result', () => {
  const settings = LIMITER_OPTIONS.resolve({ limit: 1, window: 1000 })
  expect(Object.isFrozen(settings)).toBe(true)
  expect(settings).toMatchObject({
    algorithm: 'sliding-window',
    onStoreError: 'throw',
    shadow: false,
    timeoutMs: 1000,
  })
  expect(() => LIMITER_OPTIONS.resolve({ limit: 1, window: 1000, shadow: 'yes' as never })).toThrow(
    '`shadow` must be a boolean; got "yes"',
  )
})
