import { readFileSync } from 'node:fs'
import { join } from 'node:path'

/*
 * The built entries of @sluice/core (npm test builds before jest runs): the main entry stays
 * small, and the subpath entries share its modules rather than copies of them.
 */
const dist = join(__dirname, '..', 'dist')
const root = join(__dirname, '..', '..', '..')

/* eslint-disable @typescript-eslint/no-require-imports */
const main = require(join(dist, 'index.js')) as Record<string, unknown>
const adapter = require(join(dist, 'adapter.js')) as Record<string, unknown>
/* eslint-enable @typescript-eslint/no-require-imports */

test('the main entry holds what an application uses: at most 30 runtime exports, as docs say', () => {
  const count = Object.keys(main).length
  expect(count).toBeLessThanOrEqual(30)
  const architecture = readFileSync(join(root, 'docs', 'architecture.md'), 'utf8')
  expect(architecture).toContain(`(${count} runtime exports:`)
  for (const name of ['createLimiter', 'MemoryStore', 'localTier', 'ConfigError'])
    expect(main).toHaveProperty(name)
  // The kernel's: HTTP is @sluice/http's, rules files @sluice/rules', the simulator @sluice/cli's.
  for (const name of ['createHttpLimiter', 'invalidOption', 'ipKey', 'loadRules', 'simulate'])
    expect(main).not.toHaveProperty(name)
})

test('the adapter entry shares the main entry modules: one ConfigError class', () => {
  const invalidOption = adapter.invalidOption as (
    name: string,
    value: unknown,
    expected: string,
  ) => never
  const ConfigError = main.ConfigError as new (...args: never[]) => Error
  expect(() => invalidOption('limit', -1, 'a positive integer')).toThrow(ConfigError)
})
