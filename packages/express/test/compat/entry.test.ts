// The built compatibility entry (rebuild with `npm run build -w packages/express` first): both
// require and import load it, and it exports what express-rate-limit's public entry does.
import { execFileSync } from 'node:child_process'
import { MemoryStore } from '@sluice/core'
import { DAY, HOUR, MINUTE, SECOND, MemoryStore as CompatMemoryStore } from '@sluice/express/compat'

const EXPORTS = [
  'DAY',
  'HOUR',
  'MINUTE',
  'MemoryStore',
  'SECOND',
  'default',
  'ipKeyGenerator',
  'rateLimit',
]

/** What `node` prints for `script`, run from the repository (so @sluice/express resolves). */
function nodeOutput(args: string[]): string {
  return execFileSync(process.execPath, args, { cwd: __dirname, encoding: 'utf8' }).trim()
}

test('require gives the middleware function itself, with the named exports on it', () => {
  const required = nodeOutput([
    '-e',
    "const m = require('@sluice/express/compat'); console.log(typeof m, m === m.rateLimit, m === m.default, m.MINUTE)",
  ])
  expect(required).toBe('function true true 60000')
  // The main entry stays an object of named exports.
  expect(nodeOutput(['-e', "console.log(typeof require('@sluice/express'))"])).toBe('object')
})

test('require and import both load @sluice/express/compat, with the same exports', () => {
  const required = nodeOutput([
    '-e',
    "const m = require('@sluice/express/compat'); console.log(Object.keys(m).sort().join(','), typeof m.rateLimit, m.default === m.rateLimit)",
  ])
  const imported = nodeOutput([
    '--input-type=module',
    '-e',
    "const m = await import('@sluice/express/compat'); console.log(Object.keys(m).sort().join(','), typeof m.rateLimit, m.default === m.rateLimit)",
  ])
  expect(required).toBe(`${EXPORTS.join(',')} function true`)
  expect(imported).toBe(required)
})

test("SECOND, MINUTE, HOUR and DAY are express-rate-limit's durations in ms", () => {
  expect([SECOND, MINUTE, HOUR, DAY]).toEqual([1000, 60_000, 3_600_000, 86_400_000])
})

test("MemoryStore from the compat entry is Sluice's MemoryStore", () => {
  expect(CompatMemoryStore).toBe(MemoryStore)
})
