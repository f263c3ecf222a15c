// watchRules' options are declared once: names, JSDoc and docs/ agree (testkit), and what the
// declaration gives at creation.
import { join } from 'node:path'
import { testDeclaredOptions } from '@sluice/testkit'
import { WATCH_RULES_OPTIONS } from '../src/watch'

testDeclaredOptions(WATCH_RULES_OPTIONS, [
  [join(__dirname, '..', 'src', 'watch.ts'), 'WatchRulesOptions'],
])

test("watchRules' options resolve to their declared defaults, and refuse bad values by name", () => {
  expect(WATCH_RULES_OPTIONS.resolve({ debounceMs: null as never })).toEqual({
    onChange: undefined,
    logger: console,
    debounceMs: 100,
  })
  expect(() => WATCH_RULES_OPTIONS.resolve({ debounceMs: 0 })).toThrow(
    '`debounceMs` must be a positive integer; got 0',
  )
  expect(() => WATCH_RULES_OPTIONS.resolve({ logger: null as never })).toThrow(
    '`logger` must be an object with warn(message); got null',
  )
  expect(() => WATCH_RULES_OPTIONS.resolve({ onChange: 1 as never })).toThrow(
    '`onChange` must be a function; got 1',
  )
  expect(() => WATCH_RULES_OPTIONS.resolve({ debounce: 5 } as never)).toThrow(
    'unknown option `debounce` for watchRules (value 5)',
  )
})
