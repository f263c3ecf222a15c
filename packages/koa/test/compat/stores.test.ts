import { execFileSync } from 'node:child_process'
import { resolve } from 'node:path'
import { Redis } from 'ioredis'
import request from 'supertest'
import { createLimiter } from '@sluice/core'
import { startRedis, type RedisServer } from '@sluice/testkit'
import { MapStore } from '../../src/compat/map-store'
import { serve, sleep, type Served } from './serve'

// koa-ratelimit's stores as is: its `db` Map (counts of windows from each client's first
// request, through core's adapter for increment-style peer stores, as express-rate-limit's and
// @fastify/rate-limit's stores are) and its ioredis client (RedisStore on it).

describe('driver redis: the ioredis client given as db', () => {
  let server: RedisServer
  let client: Redis
  let app: Served | undefined

  beforeAll(async () => {
    server = await startRedis()
    client = new Redis({ port: server.port, host: server.host, maxRetriesPerRequest: 1 })
  })
  afterEach(async () => {
    await app?.close()
    app = undefined
    await client.flushall()
  })
  afterAll(async () => {
    client.disconnect()
    await server.stop()
  })

  test('counts a sliding log, as koa-ratelimit’s Redis driver does', async () => {
    app = await serve({ driver: 'redis', db: client, max: 2, duration: 2000 })
    const first = Date.now()
    await request(app.url).get('/').expect(200)
    await sleep(first + 1000 - Date.now())
    await request(app.url).get('/').expect(200)
    await sleep(first + 1300 - Date.now())
    await request(app.url).get('/').expect(429)
    // The first request has left the log; the second is still in it. A window counted from
    // the first request would have started afresh and let two more through.
    await sleep(first + 2300 - Date.now())
    await request(app.url).get('/').expect(200)
    await request(app.url).get('/').expect(429)
  })

  test('keys live under <namespace>:*, and deleting them lets the client in again', async () => {
    app = await serve({ db: client, max: 1 })
    await request(app.url).get('/').expect(200)
    await request(app.url).get('/').expect(429)
    const keys = await client.keys('limit:*')
    expect(keys).toHaveLength(1)
    expect(keys[0]).toMatch(/^limit:\{127\.0\.0\.1\}:/)
    await client.del(...keys)
    await request(app.url).get('/').expect(200)
  })

  test('the default message and Retry-After come from the log', async () => {
    app = await serve({ db: client, max: 1 })
    await request(app.url).get('/').expect(200)
    const res = await request(app.url).get('/').expect(429)
    expect(res.text).toBe('Rate limit exceeded, retry in 60 minutes.')
    expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(3599)
    expect(Number(res.headers['retry-after'])).toBeLessThanOrEqual(3601)
  })
})

test('require(@sluice/koa/compat) is the ratelimit function, as require(koa-ratelimit) is', () => {
  // The built package, as an application loads it (CommonJS and ESM).
  const dist = resolve(__dirname, '../../dist')
  const cjs = `const r = require(${JSON.stringify(`${dist}/compat.js`)}); process.stdout.write(typeof r + ' ' + r.name)`
  expect(execFileSync(process.execPath, ['-e', cjs], { encoding: 'utf8' })).toBe(
    'function ratelimit',
  )
  const esm = `import r from ${JSON.stringify(`${dist}/compat.mjs`)}; process.stdout.write(typeof r)`
  expect(
    execFileSync(process.execPath, ['--input-type=module', '-e', esm], { encoding: 'utf8' }),
  ).toBe('function')
})

/** A limiter counting in `db` as the compat entry's memory driver does (one-minute windows). */
function mapLimiter(db: Map<string, unknown>, limit: number, clock: () => number) {
  return createLimiter({
    store: new MapStore(db, 'limit'),
    limit,
    window: 60_000,
    algorithm: 'fixed-window',
    anchor: 'first-request',
    clock,
  })
}

test('the db Map is swept: clients whose window ended are dropped, the live ones kept exactly', async () => {
  const db = new Map<string, unknown>()
  db.set('app-owned', 'kept') // a value of the application's own is left alone
  let now = 1_000_000
  const limiter = mapLimiter(db, 3, () => now)
  for (let i = 0; i < 5_000; i++) await limiter.consume(`id-${i}`)
  expect(db.size).toBe(5_001)
  now += 30_000
  await limiter.consume('late') // its window ends 30 s after the others'
  now += 30_001
  // Each consume looks at the 4 oldest entries (the app's value is one): 1,700 clear 5,000,
  // refused requests included.
  for (let i = 0; i < 1_700; i++) await limiter.consume('steady')
  expect([...db.keys()].sort()).toEqual(['app-owned', 'limit:late', 'limit:steady'])
  // The live ones keep their exact counts.
  expect((await limiter.peek('late')).remaining).toBe(2)
  expect((await limiter.consume('late')).remaining).toBe(1)
})

test("the db Map holds each client's count and window end; reward and reset change it exactly", async () => {
  const db = new Map<string, unknown>()
  const limiter = mapLimiter(db, 2, () => 1_000_000)
  for (let i = 0; i < 3; i++) await limiter.consume('k')
  // Refused requests are counted too, as koa-ratelimit counts them.
  expect(db.get('limit:k')).toEqual({ count: 3, endsAt: 1_060_000 })
  await limiter.reward('k')
  expect(db.get('limit:k')).toEqual({ count: 2, endsAt: 1_060_000 })
  await limiter.reset('k')
  expect(db.has('limit:k')).toBe(false)
})
