// simulate's options are declared once (SIMULATE_OPTIONS): names, JSDoc and docs/ agree
// (testkit), and an undeclared name is refused, naming it and its value.
import { join } from 'node:path'
import { testDeclaredOptions } from '@sluice/testkit'
import { simulate } from '@sluice/cli'
import { SIMULATE_OPTIONS } from '../src/simulate/simulate'

const CORE = join(__dirname, '..', '..', 'core', 'src', 'options.ts')

testDeclaredOptions(SIMULATE_OPTIONS, [
  [CORE, 'LimitOptions'],
  [join(__dirname, '..', 'src', 'simulate', 'simulate.ts'), 'SimulateOptions'],
])

test('a name simulate does not declare is refused, naming it and its value', () => {
  expect(() => simulate([{ at: 0 }], { limit: 1, window: 1000, store: 1 } as never)).toThrow(
    'unknown option `store` for simulate (value 1)',
  )
})

test("simulate's defaults come from the declaration, frozen", () => {
  const settings = SIMULATE_OPTIONS.resolve({ limit: 1, window: 1000 })
  expect(Object.isFrozen(settings)).toBe(true)
  expect(settings).toMatchObject({ algorithm: 'sliding-window', precision: 1, anchor: 'clock' })
})
