// The built compatibility entry (rebuild with `npm run build -w packages/express` first): both
// require and import load it, and it exports what express-rate-limit's public entry does.
import { execFileSync } from 'node:child_process'
import {
  DAY,
  HOUR,
  MINUTE,
  SECOND,
  MemoryStore as CompatMemoryStore,
  rateLimit,
} from '@sluice/express/compat'
import { fixedNow, serve } from './serve'

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

describe("MemoryStore from the compat entry: express-rate-limit's store interface on Sluice's core", () => {
  const windowMs = 60_000

  function store(): CompatMemoryStore {
    const made = new CompatMemoryStore()
    made.init({ windowMs })
    return made
  }

  test('increment counts from 1 in a window from the first hit; get reads without counting', async () => {
    const clock = fixedNow(5_000_000)
    const s = store()
    expect(await s.get('k')).toBeUndefined()
    expect(await s.increment('k')).toEqual({ totalHits: 1, resetTime: new Date(5_060_000) })
    clock.advance(10_000)
    expect(await s.increment('k')).toEqual({ totalHits: 2, resetTime: new Date(5_060_000) })
    expect(await s.get('k')).toEqual({ totalHits: 2, resetTime: new Date(5_060_000) })
    expect(await s.get('k')).toEqual({ totalHits: 2, resetTime: new Date(5_060_000) })
    // The window ends a whole window after the first hit: the count starts over.
    clock.advance(50_000)
    expect(await s.get('k')).toBeUndefined()
    expect(await s.increment('k')).toEqual({ totalHits: 1, resetTime: new Date(5_120_000) })
    await s.shutdown()
  })

  test('decrement takes one hit back, never below 0; resetKey and resetAll forget', async () => {
    fixedNow(5_000_000)
    const s = store()
    await s.increment('a')
    await s.increment('a')
    await s.decrement('a')
    expect((await s.increment('a')).totalHits).toBe(2)
    await s.decrement('a')
    await s.decrement('a')
    await s.decrement('a')
    expect((await s.increment('a')).totalHits).toBe(1)
    await s.increment('b')
    await s.resetKey('a')
    expect(await s.get('a')).toBeUndefined()
    expect((await s.get('b'))?.totalHits).toBe(1)
    s.resetAll()
    expect(await s.get('b')).toBeUndefined()
    expect((await s.increment('b')).totalHits).toBe(1)
    await s.shutdown()
  })

  test('a store that was never given init counts in a one-minute window', async () => {
    fixedNow(5_000_000)
    const s = new CompatMemoryStore()
    expect(await s.increment('k')).toEqual({ totalHits: 1, resetTime: new Date(5_060_000) })
    await s.shutdown()
  })

  test('given as store, the middleware counts with it, rejected hits included, as express-rate-limit does', async () => {
    fixedNow(5_000_000)
    const s = new CompatMemoryStore()
    const { get } = await serve(
      rateLimit({ limit: 1, windowMs, store: s, keyGenerator: () => 'k' }),
    )
    await get().expect(200).expect('x-ratelimit-remaining', '0')
    await get().expect(429)
    expect((await s.get('k'))?.totalHits).toBe(2)
    await s.resetKey('k')
    await get().expect(200)
    await s.shutdown()
  })
})
