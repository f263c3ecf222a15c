import { createHash } from 'node:crypto'
import { ALGORITHMS, type WindowAnchor } from '@sluice/core'
import { SCRIPTS } from '@sluice/redis'
import { startRedis, type RedisServer } from '@sluice/testkit'
import { Redis } from 'ioredis'
import { resolvePolicy } from '@sluice/core/adapter'
import { compile, flatLua, hasPackedFlat, packedFlatLua, script, severalShape } from '../src/lua'
import { SLOT_SCRIPTS } from '../src/slots'
import { sha1Hex } from '../src/web-crypto'

// RedisStore names every script by a SHA1 it computes without node:crypto (so it loads on edge
// runtimes): EVALSHA finds a script only if that SHA is exactly what SCRIPT LOAD answers.

const baked = { limit: 7, windowMs: 60_000, burst: 9, precision: 6, slackMs: 250 }
const ANCHORS: readonly WindowAnchor[] = ['clock', 'first-request']

/** Several limits of every algorithm with flat steps (a limiter's own script of them all). */
const SEVERAL = (
  ['gcra', 'sliding-window', 'fixed-window', 'token-bucket', 'leaky-bucket'] as const
).map((algorithm, i) => resolvePolicy({ name: `l${i}`, algorithm, limit: 7 + i, window: 60_000 }))

/** Every script text the store sends: shared, slots, and each algorithm's baked forms. */
const EVERY_SCRIPT: readonly (readonly [string, string])[] = [
  ...Object.entries(SCRIPTS).map(([name, s]) => [name, s.lua] as const),
  ...Object.entries(SLOT_SCRIPTS).map(([name, s]) => [`slots ${name}`, s.lua] as const),
  ...ALGORITHMS.flatMap((a) =>
    ANCHORS.flatMap((anchor) => [
      [`${a} own (${anchor})`, flatLua(a, baked, false, anchor)] as const,
      [`${a} batch (${anchor})`, flatLua(a, baked, true, anchor)] as const,
      ...(hasPackedFlat(a)
        ? [[`${a} packed batch (${anchor})`, packedFlatLua(a, baked, true, anchor)] as const]
        : []),
    ]),
  ),
  ...(['keys', 'packed'] as const).flatMap((layout) =>
    (['single', 'batch'] as const).map(
      (calls) =>
        [`several ${layout} ${calls}`, compile(severalShape(SEVERAL, layout, 250, calls))] as const,
    ),
  ),
]

let server: RedisServer
let redis: Redis

beforeAll(async () => {
  server = await startRedis()
  redis = new Redis({ host: server.host, port: server.port })
})

afterAll(async () => {
  redis?.disconnect()
  await server?.stop()
})

test('every script the store sends loads on a real server under the SHA the store computes', async () => {
  const loaded = await Promise.all(EVERY_SCRIPT.map(([, lua]) => redis.script('LOAD', lua)))
  const wrong = EVERY_SCRIPT.filter(([, lua], i) => script(lua).sha !== loaded[i])
  expect(wrong.map(([name]) => name)).toEqual([])
  expect(EVERY_SCRIPT.length).toBeGreaterThan(40)
})

test('SHA1 equals node:crypto across block boundaries and for text past ASCII', () => {
  const texts = [
    '',
    'abc',
    ...[55, 56, 63, 64, 65, 119, 120, 128].map((n) => 'x'.repeat(n)),
    'é€😀 -- a comment in Lua',
    '\ud800 lone surrogate',
  ]
  for (const text of texts) {
    expect(sha1Hex(text)).toBe(createHash('sha1').update(text).digest('hex'))
  }
})
