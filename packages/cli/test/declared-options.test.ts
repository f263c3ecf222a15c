// simulate's options are declared once (SIMULATE_OPTIONS): names, JSDoc and docs/ agree
// (testkit), and an undeclared name is refused, naming it and its value.
import { join } from 'node:path'
import { testDeclaredOptions } from '@sluice/testkit'
import { simulate } from '@sluice/cli'
import { SIMULATE_OPTIONS } from '../src/simulate/simulate'
import { RENDER_OPTIONS } from '../src/simulate/svg'
import { TRACE_OPTIONS } from '../src/simulate/traces'

const CORE = join(__dirname, '..', '..', 'core', 'src', 'options.ts')

testDeclaredOptions(SIMULATE_OPTIONS, [
  [CORE, 'LimitOptions'],
  [join(__dirname, '..', 'src', 'simulate', 'simulate.ts'), 'SimulateOptions'],
])

testDeclaredOptions(TRACE_OPTIONS, [
  [join(__dirname, '..', 'src', 'simulate', 'traces.ts'), 'TraceOptions'],
])
testDeclaredOptions(RENDER_OPTIONS, [
  [join(__dirname, '..', 'src', 'simulate', 'svg.ts'), 'RenderOptions'],
])

test('makeTrace and renderSvg resolve to their declared defaults', () => {
  expect(TRACE_OPTIONS.resolve({ limit: 5, windowMs: 1000, seed: null as never })).toEqual({
    limit: 5,
    windowMs: 1000,
    windows: 8,
    seed: 1,
    key: 'client',
  })
  expect(() => TRACE_OPTIONS.resolve({ limit: 5, windowMs: 1000, windows: 0 })).toThrow(
    '`windows` must be a positive integer; got 0',
  )
  expect(RENDER_OPTIONS.resolve({})).toMatchObject({ width: 480, height: 200 })
  expect(() => RENDER_OPTIONS.resolve({ width: 20_000 })).toThrow(
    '`width` must be at most 10000 (px); got 20000',
  )
  expect(() => RENDER_OPTIONS.resolve({ colour: 'red' } as never)).toThrow(
    'unknown option `colour` for renderSvg (value "red")',
  )
})

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
