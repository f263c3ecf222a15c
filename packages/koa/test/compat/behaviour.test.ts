import request from 'supertest'
import { ConfigError } from '@sluice/core'
import ratelimit from '@sluice/koa/compat'
import { serve, sleep, type Served } from './serve'

// Each koa-ratelimit behaviour @sluice/koa/compat matches, on a real socket.

let app: Served | undefined

afterEach(async () => {
  await app?.close()
  app = undefined
})

describe('koa-ratelimit behaviours', () => {
  test('defaults are the peer’s: 2500 requests per hour, reset in epoch seconds', async () => {
    app = await serve({ db: new Map() })
    const before = Math.floor(Date.now() / 1000)
    const res = await request(app.url).get('/').expect(200, 'ok')
    const after = Math.ceil(Date.now() / 1000)
    expect(res.headers['x-ratelimit-limit']).toBe('2500')
    expect(res.headers['x-ratelimit-remaining']).toBe('2499')
    const reset = Number(res.headers['x-ratelimit-reset'])
    expect(reset).toBeGreaterThanOrEqual(before + 3600)
    expect(reset).toBeLessThanOrEqual(after + 3600)
  })

  test('max requests pass, remaining counts down to 0, the next is refused without reaching the app', async () => {
    app = await serve({ db: new Map(), max: 2 })
    await request(app.url).get('/').expect(200).expect('X-RateLimit-Remaining', '1')
    await request(app.url).get('/').expect(200).expect('X-RateLimit-Remaining', '0')
    const res = await request(app.url).get('/').expect(429).expect('X-RateLimit-Remaining', '0')
    expect(res.headers['x-ratelimit-limit']).toBe('2')
    expect(app.hits()).toBe(2)
  })

  test('the default rejection is text: "Rate limit exceeded, retry in 60 minutes."', async () => {
    app = await serve({ db: new Map(), max: 1 })
    await request(app.url).get('/').expect(200)
    const res = await request(app.url).get('/').expect(429)
    expect(res.headers['content-type']).toBe('text/plain; charset=utf-8')
    expect(res.text).toBe('Rate limit exceeded, retry in 60 minutes.')
  })

  test('the wait in words follows the window: "retry in 2 seconds" for a 2 s window', async () => {
    app = await serve({ db: new Map(), max: 1, duration: 2000 })
    await request(app.url).get('/').expect(200)
    const res = await request(app.url).get('/').expect(429)
    expect(res.text).toBe('Rate limit exceeded, retry in 2 seconds.')
  })

  test('a rejection carries Retry-After (whole seconds, rounded up) and no X-RateLimit-Retry-After', async () => {
    app = await serve({ db: new Map(), max: 1, duration: 10_000 })
    await request(app.url).get('/').expect(200)
    const res = await request(app.url).get('/').expect(429)
    const retryAfter = Number(res.headers['retry-after'])
    expect(retryAfter).toBeGreaterThanOrEqual(10)
    expect(retryAfter).toBeLessThanOrEqual(11)
    expect(res.headers['x-ratelimit-retry-after']).toBeUndefined()
  })

  test('errorMessage and status answer the rejection as text', async () => {
    app = await serve({ db: new Map(), max: 1, errorMessage: 'Slow down.', status: 503 })
    await request(app.url).get('/').expect(200)
    const res = await request(app.url).get('/').expect(503, 'Slow down.')
    expect(res.headers['content-type']).toBe('text/plain; charset=utf-8')
  })

  test('throw: true throws status, message and the rate-limit headers to upstream middleware', async () => {
    app = await serve({ db: new Map(), max: 1, duration: 10_000, throw: true })
    await request(app.url).get('/').expect(200)
    const res = await request(app.url).get('/').expect(429)
    expect(res.text).toBe('Rate limit exceeded, retry in 10 seconds.')
    expect(res.headers['x-ratelimit-remaining']).toBe('0')
    expect(app.errors).toHaveLength(1)
    const [error] = app.errors
    expect(error.status).toBe(429)
    expect(error.message).toBe('Rate limit exceeded, retry in 10 seconds.')
    expect(Object.keys(error.headers).sort()).toEqual([
      'Retry-After',
      'X-RateLimit-Limit',
      'X-RateLimit-Remaining',
      'X-RateLimit-Reset',
    ])
    expect(error.headers['X-RateLimit-Limit']).toBe('1')
  })

  test('onLimited (koa-ratelimit 6) runs once the answer is set, and may change it', async () => {
    const seen: Array<[number, unknown]> = []
    app = await serve({
      db: new Map(),
      max: 1,
      duration: 5000,
      onLimited: (ctx) => {
        seen.push([ctx.status, ctx.body])
        ctx.body = { limited: true }
      },
    })
    await request(app.url).get('/').expect(200)
    expect(seen).toEqual([])
    await request(app.url).get('/').expect(429, { limited: true })
    expect(seen).toEqual([[429, 'Rate limit exceeded, retry in 5 seconds.']])
  })

  test('onLimited runs before a rejection is thrown', async () => {
    let calls = 0
    app = await serve({ db: new Map(), max: 1, throw: true, onLimited: () => void calls++ })
    await request(app.url).get('/').expect(200)
    await request(app.url).get('/').expect(429)
    expect(calls).toBe(1)
    expect(app.errors.map((e) => e.status)).toEqual([429])
  })

  test('a client’s window runs from its first request, not from the clock', async () => {
    // Start 850 ms into a clock second: a clock-aligned window would end 150 ms later.
    await sleep(1850 - (Date.now() % 1000))
    app = await serve({ db: new Map(), max: 1, duration: 1000 })
    const first = Date.now()
    await request(app.url).get('/').expect(200)
    await sleep(first + 400 - Date.now())
    await request(app.url).get('/').expect(429)
    await sleep(first + 1100 - Date.now())
    await request(app.url).get('/').expect(200)
  })

  test('db.clear() forgets every client, as with the peer’s Map', async () => {
    const db = new Map<string, unknown>()
    app = await serve({ driver: 'memory', db, max: 1 })
    await request(app.url).get('/').expect(200)
    await request(app.url).get('/').expect(429)
    expect([...db.keys()]).toEqual(['limit:127.0.0.1'])
    db.clear()
    await request(app.url).get('/').expect(200)
  })

  test('namespace names the Map entries', async () => {
    const db = new Map<string, unknown>()
    app = await serve({ db, namespace: 'api', id: (ctx) => ctx.get('x-user') })
    await request(app.url).get('/').set('x-user', 'ada').expect(200)
    expect([...db.keys()]).toEqual(['api:ada'])
  })

  test('id keys clients apart; id returning false passes without headers', async () => {
    app = await serve({
      db: new Map(),
      max: 1,
      id: (ctx) => (ctx.get('x-user') === 'free' ? false : ctx.get('x-user')),
    })
    await request(app.url).get('/').set('x-user', 'ada').expect(200)
    await request(app.url).get('/').set('x-user', 'bob').expect(200)
    await request(app.url).get('/').set('x-user', 'ada').expect(429)
    for (let i = 0; i < 3; i++) {
      const res = await request(app.url).get('/').set('x-user', 'free').expect(200)
      expect(res.headers['x-ratelimit-remaining']).toBeUndefined()
    }
  })

  test('id returning undefined limits by client IP, not one bucket for every such request', async () => {
    const db = new Map<string, unknown>()
    app = await serve({ db, max: 1, id: () => undefined })
    await request(app.url).get('/').expect(200)
    expect([...db.keys()]).toEqual(['limit:127.0.0.1'])
  })

  test('the default id is ctx.ip as is: IPv6 clients of one /64 are limited apart', async () => {
    app = await serve({ db: new Map(), max: 1 }, (koa) => {
      koa.proxy = true
      koa.maxIpsCount = 1
    })
    await request(app.url).get('/').set('X-Forwarded-For', '2001:db8::1').expect(200)
    await request(app.url).get('/').set('X-Forwarded-For', '2001:db8::2').expect(200)
    await request(app.url).get('/').set('X-Forwarded-For', '2001:db8::1').expect(429)
  })

  test('whitelist passes requests unlimited and without headers', async () => {
    app = await serve({ db: new Map(), max: 1, whitelist: (ctx) => ctx.get('x-vip') === 'yes' })
    for (let i = 0; i < 3; i++) {
      const res = await request(app.url).get('/').set('x-vip', 'yes').expect(200)
      expect(res.headers['x-ratelimit-limit']).toBeUndefined()
    }
    await request(app.url).get('/').expect(200)
    await request(app.url).get('/').expect(429)
  })

  test('blacklist throws 403 Forbidden before counting, even when id bypasses', async () => {
    const db = new Map<string, unknown>()
    app = await serve({
      db,
      max: 1,
      id: () => false,
      blacklist: async (ctx) => ctx.get('x-bad') === 'yes',
    })
    const res = await request(app.url).get('/').set('x-bad', 'yes').expect(403, 'Forbidden')
    expect(res.headers['x-ratelimit-limit']).toBeUndefined()
    expect(app.errors.map((e) => e.status)).toEqual([403])
    expect(db.size).toBe(0)
    await request(app.url).get('/').expect(200)
  })

  test('headers renames the three headers', async () => {
    app = await serve({
      db: new Map(),
      max: 1,
      headers: {
        remaining: 'Rate-Limit-Remaining',
        reset: 'Rate-Limit-Reset',
        total: 'Rate-Limit-Total',
      },
    })
    const res = await request(app.url).get('/').expect(200)
    expect(res.headers['rate-limit-total']).toBe('1')
    expect(res.headers['rate-limit-remaining']).toBe('0')
    expect(res.headers['rate-limit-reset']).toMatch(/^\d+$/)
    expect(res.headers['x-ratelimit-limit']).toBeUndefined()
  })

  test('disableHeader drops the X-RateLimit-* headers; a rejection still says Retry-After', async () => {
    app = await serve({ db: new Map(), max: 1, duration: 5000, disableHeader: true })
    const ok = await request(app.url).get('/').expect(200)
    expect(Object.keys(ok.headers).filter((name) => name.includes('ratelimit'))).toEqual([])
    const refused = await request(app.url).get('/').expect(429)
    expect(Object.keys(refused.headers).filter((name) => name.includes('ratelimit'))).toEqual([])
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(5)
  })

  test('without db, a MemoryStore of the middleware’s own counts per-key windows', async () => {
    app = await serve({ max: 1 })
    await request(app.url).get('/').expect(200)
    await request(app.url).get('/').expect(429)
  })
})

describe('koa-ratelimit options checked at creation', () => {
  test.each([
    [{ driver: 'mongo' }, "`driver` must be 'memory' or 'redis'; got \"mongo\""],
    [{ driver: 'redis' }, "`db` must be an ioredis client when driver is 'redis'; got undefined"],
    [{ driver: 'redis', db: new Map() }, "`db` must be an ioredis client when driver is 'redis'"],
    [
      { db: 'redis://localhost' },
      '`db` must be a Map or an ioredis client; got "redis://localhost"',
    ],
    [{ max: 0 }, '`max` must be a positive integer; got 0'],
    [{ max: -5 }, '`max` must be a positive integer; got -5'],
    [{ max: () => 5 }, '`max` must be a positive integer'],
    [{ duration: '1h' }, '`duration` must be a positive number of ms; got "1h"'],
    [{ duration: Number.NaN }, '`duration` must be a positive number of ms; got NaN'],
    [{ id: 'ip' }, '`id` must be a function; got "ip"'],
    [{ whitelist: ['127.0.0.1'] }, '`whitelist` must be a function'],
    [{ onLimited: true }, '`onLimited` must be a function; got true'],
    [{ errorMessage: { error: 'x' } }, '`errorMessage` must be a string'],
    [{ status: 200 }, '`status` must be an HTTP error status (400-599); got 200'],
    [{ throw: 'yes' }, '`throw` must be true or false; got "yes"'],
    [{ namespace: '' }, '`namespace` must be a non-empty string without braces; got ""'],
    [{ headers: { total: 5 } }, '`headers.total` must be a header name'],
    [{ headers: { total: 'bad name' } }, '`headers.total` must be a header name'],
    [{ headers: { reset: '' } }, '`headers.reset` must be a header name'],
    [{ windowMs: 1000 }, '`windowMs` must be unset (not a koa-ratelimit option); got 1000'],
  ])('%j throws a ConfigError: %s', (options, message) => {
    const create = () => ratelimit(options as unknown as ratelimit.Options)
    expect(create).toThrow(ConfigError)
    expect(create).toThrow(message)
  })
})
