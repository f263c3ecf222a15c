import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify'
import { Redis } from 'ioredis'
import request from 'supertest'
import { startRedis, type RedisServer } from '@sluice/testkit'
import rateLimit, {
  normalizeIP,
  type PeerStore,
  type PeerStoreCallback,
  type RateLimitContext,
  type RateLimitParams,
  type RateLimitPluginOptions,
} from '@sluice/fastify/compat'

// @sluice/fastify/compat behaves as @fastify/rate-limit does; each test names one behaviour of
// the peer's that the compat entry matches. Time: only Date is faked (sockets and timers run),
// so windows are exact and the requests go through real sockets.
const NOT_DATE = [
  'hrtime',
  'nextTick',
  'performance',
  'queueMicrotask',
  'setImmediate',
  'clearImmediate',
  'setInterval',
  'clearInterval',
  'setTimeout',
  'clearTimeout',
] as const
const T0 = 1_700_000_000_000

const apps: FastifyInstance[] = []
beforeEach(() => {
  jest.useFakeTimers({ doNotFake: [...NOT_DATE] })
  jest.setSystemTime(T0)
})
afterEach(async () => {
  jest.useRealTimers()
  await Promise.all(apps.splice(0).map((app) => app.close()))
})

async function build(options: RateLimitPluginOptions, setup?: (app: FastifyInstance) => void) {
  const app = Fastify()
  apps.push(app)
  await app.register(rateLimit, options)
  if (setup) setup(app)
  else app.get('/', async () => 'hello')
  await app.listen({ port: 0, host: '127.0.0.1' })
  return app
}

async function hit(app: FastifyInstance, url = '/', headers: Record<string, string> = {}) {
  const res = await request(app.server).get(url).set(headers)
  return { status: res.status, headers: res.headers, body: res.body as unknown, text: res.text }
}

/** limit, remaining, reset and retry-after, '-' for one not sent: e.g. '2 0 7 7'. */
const limitHeaders = (res: { headers: Record<string, string> }) =>
  ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'retry-after']
    .map((name) => res.headers[name] ?? '-')
    .join(' ')

const byHeader = { keyGenerator: (req: FastifyRequest) => String(req.headers['x-client']) }

test('each key has its own fixed window, counted from its first request', async () => {
  const app = await build({ max: 2, timeWindow: 10_000, ...byHeader })
  expect(limitHeaders(await hit(app, '/', { 'x-client': 'a' }))).toBe('2 1 10 -')
  jest.setSystemTime(T0 + 3000)
  expect(limitHeaders(await hit(app, '/', { 'x-client': 'b' }))).toBe('2 1 10 -')
  expect(limitHeaders(await hit(app, '/', { 'x-client': 'a' }))).toBe('2 0 7 -')
  const refused = await hit(app, '/', { 'x-client': 'a' })
  expect(refused.status).toBe(429)
  expect(limitHeaders(refused)).toBe('2 0 7 7')
  jest.setSystemTime(T0 + 10_000)
  expect(limitHeaders(await hit(app, '/', { 'x-client': 'a' }))).toBe('2 1 10 -')
  expect(limitHeaders(await hit(app, '/', { 'x-client': 'b' }))).toBe('2 0 3 -')
})

test("the default 429 body is Fastify's error for 'Rate limit exceeded, retry in <wait in words>'", async () => {
  const app = await build({ max: 1, timeWindow: '2 minutes' })
  await hit(app)
  jest.setSystemTime(T0 + 30_000)
  const refused = await hit(app)
  expect(refused.status).toBe(429)
  expect(refused.headers['content-type']).toBe('application/json; charset=utf-8')
  expect(refused.body).toEqual({
    statusCode: 429,
    error: 'Too Many Requests',
    message: 'Rate limit exceeded, retry in 2 minutes',
  })
  jest.setSystemTime(T0 + 119_000)
  expect((await hit(app)).body).toEqual({
    statusCode: 429,
    error: 'Too Many Requests',
    message: 'Rate limit exceeded, retry in 1 second',
  })
})

test('an unusable max or timeWindow falls back to the defaults, 1000 per minute', async () => {
  const app = await build({ max: NaN, timeWindow: -5 })
  expect(limitHeaders(await hit(app))).toBe('1000 999 60 -')
})

test('max: 0 refuses every request', async () => {
  const app = await build({ max: 0, timeWindow: 5000 })
  const refused = await hit(app)
  expect(refused.status).toBe(429)
  expect(limitHeaders(refused)).toBe('0 0 5 5')
})

test('a window longer than a policy may have (2^50 ms) is cut to fit, not a failed request', async () => {
  const app = await build({ max: 2, timeWindow: 2 ** 52 })
  expect(limitHeaders(await hit(app))).toBe(`2 1 ${Math.ceil(2 ** 50 / 1000)} -`)
})

test('a budget past 2^50 for limit x window is kept whole, not cut', async () => {
  const app = await build({ max: 1e9, timeWindow: 86_400_000 })
  expect(limitHeaders(await hit(app))).toBe('1000000000 999999999 86400 -')
})

test('exponentialBackoff stops doubling at Number.MAX_SAFE_INTEGER ms', async () => {
  const app = await build({ max: 1, timeWindow: 2 ** 40, exponentialBackoff: true })
  await hit(app)
  const waits = []
  for (let i = 0; i < 16; i++) waits.push((await hit(app)).headers['retry-after'])
  expect(waits.slice(0, 2)).toEqual(['1099511628', '2199023256'])
  expect(waits.slice(13)).toEqual(Array(3).fill(String(Math.ceil(Number.MAX_SAFE_INTEGER / 1000))))
})

test('max and timeWindow as functions get the request and its key', async () => {
  const seen: unknown[] = []
  const app = await build({
    ...byHeader,
    max: (req, key) => {
      seen.push(['max', req.url, key])
      return key === 'gold' ? 3 : 1
    },
    timeWindow: async (_req, key) => (key === 'gold' ? 30_000 : 10_000),
  })
  expect(limitHeaders(await hit(app, '/', { 'x-client': 'gold' }))).toBe('3 2 30 -')
  expect(limitHeaders(await hit(app, '/', { 'x-client': 'tin' }))).toBe('1 0 10 -')
  expect((await hit(app, '/', { 'x-client': 'tin' })).status).toBe(429)
  expect(seen).toEqual([
    ['max', '/', 'gold'],
    ['max', '/', 'tin'],
    ['max', '/', 'tin'],
  ])
})

test('allowList as a function gets the request and the key as the key generator returned it', async () => {
  const seen: unknown[] = []
  const app = await build({
    max: 1,
    keyGenerator: () => 42,
    allowList: (req, key) => {
      seen.push(key)
      return req.headers['x-trusted'] !== undefined
    },
  })
  for (let i = 0; i < 3; i++) expect((await hit(app, '/', { 'x-trusted': '1' })).status).toBe(200)
  expect(limitHeaders(await hit(app))).toBe('1 0 60 -')
  expect((await hit(app)).status).toBe(429)
  expect(seen).toEqual([42, 42, 42, 42, 42])
})

test('allowList as an array holds keys: listed keys are not limited and get no headers', async () => {
  const app = await build({ max: 1, allowList: ['vip'], ...byHeader })
  for (let i = 0; i < 3; i++) {
    const res = await hit(app, '/', { 'x-client': 'vip' })
    expect([res.status, res.headers['x-ratelimit-limit']]).toEqual([200, undefined])
  }
})

test("whitelist, @fastify/rate-limit 10's name of allowList, is accepted on the plugin", async () => {
  const app = await build({ max: 1, whitelist: (req) => req.headers['x-trusted'] !== undefined })
  for (let i = 0; i < 3; i++) expect((await hit(app, '/', { 'x-trusted': '1' })).status).toBe(200)
  await hit(app)
  expect((await hit(app)).status).toBe(429)
})

test('errorResponseBuilder gets { statusCode, ban, max, ttl, after } and what it returns is thrown', async () => {
  const contexts: RateLimitContext[] = []
  const app = await build({
    max: 1,
    timeWindow: 10_000,
    errorResponseBuilder: (_req, context) => {
      contexts.push(context)
      return { statusCode: 429, custom: `wait ${context.after}` }
    },
  })
  await hit(app)
  jest.setSystemTime(T0 + 2500)
  const refused = await hit(app)
  expect([refused.status, refused.body]).toEqual([
    429,
    { statusCode: 429, custom: 'wait 8 seconds' },
  ])
  expect(contexts).toEqual([{ statusCode: 429, ban: false, max: 1, ttl: 7500, after: '8 seconds' }])
})

test('ban: past max + ban requests in a window the answer is 403, and onBanReach is called', async () => {
  const events: string[] = []
  const app = await build({
    max: 1,
    ban: 1,
    onExceeding: (_req, key) => void events.push(`exceeding ${key}`),
    onExceeded: (_req, key) => void events.push(`exceeded ${key}`),
    onBanReach: (_req, key) => void events.push(`ban ${key}`),
  })
  const statuses = []
  for (let i = 0; i < 4; i++) statuses.push((await hit(app)).status)
  expect(statuses).toEqual([200, 429, 403, 403])
  expect(events).toEqual([
    'exceeding 127.0.0.1',
    'exceeded 127.0.0.1',
    'exceeded 127.0.0.1',
    'ban 127.0.0.1',
    'exceeded 127.0.0.1',
    'ban 127.0.0.1',
  ])
})

test('continueExceeding: each request over the limit restarts the window', async () => {
  const app = await build({ max: 1, timeWindow: 10_000, continueExceeding: true })
  await hit(app)
  jest.setSystemTime(T0 + 4000)
  expect(limitHeaders(await hit(app))).toBe('1 0 10 10')
  jest.setSystemTime(T0 + 13_000)
  expect(limitHeaders(await hit(app))).toBe('1 0 10 10')
  jest.setSystemTime(T0 + 23_000)
  expect(limitHeaders(await hit(app))).toBe('1 0 10 -')
})

test('exponentialBackoff: each request over the limit doubles the wait', async () => {
  const app = await build({ max: 1, timeWindow: 1000, exponentialBackoff: true })
  await hit(app)
  const waits = []
  for (let i = 0; i < 4; i++) waits.push((await hit(app)).headers['retry-after'])
  expect(waits).toEqual(['1', '2', '4', '8'])
  // Still waiting: this request over the limit doubles the wait again.
  jest.setSystemTime(T0 + 7999)
  expect(limitHeaders(await hit(app))).toBe('1 0 16 16')
  jest.setSystemTime(T0 + 7999 + 16_000)
  expect(limitHeaders(await hit(app))).toBe('1 0 1 -')
})

test('a @fastify/rate-limit store class is used as is: incr(key, cb, timeWindow, max), child() per route', async () => {
  const calls: unknown[] = []
  class CountingStore implements PeerStore {
    private readonly counts = new Map<string, number>()
    constructor(private readonly params: RateLimitParams) {}
    incr(key: string, callback: PeerStoreCallback, timeWindow: number, max: number) {
      calls.push([this.params.routeInfo.url ?? 'global', key, timeWindow, max])
      const current = (this.counts.get(key) ?? 0) + 1
      this.counts.set(key, current)
      callback(null, { current, ttl: 4200 })
    }
    child(params: RateLimitParams) {
      return new CountingStore(params)
    }
  }
  const app = await build({ max: 1, timeWindow: 9000, store: CountingStore }, (a) => {
    a.get('/', async () => 'hello')
    a.get('/own', { config: { rateLimit: { max: 5 } } }, async () => 'own')
  })
  expect(limitHeaders(await hit(app))).toBe('1 0 5 -')
  expect(limitHeaders(await hit(app))).toBe('1 0 5 5')
  expect(limitHeaders(await hit(app, '/own'))).toBe('5 4 5 -')
  expect(calls).toEqual([
    ['global', '127.0.0.1', 9000, 1],
    ['global', '127.0.0.1', 9000, 1],
    ['/own', '127.0.0.1', 9000, 5],
  ])
})

test('routes with one groupId share one count per key, as @fastify/rate-limit documents groupId', async () => {
  const app = await build({ max: 100 }, (a) => {
    const otp = { config: { rateLimit: { max: 3, timeWindow: '1 minute', groupId: 'otp' } } }
    a.get('/otp/send', otp, async () => 'sent')
    a.get('/otp/resend', otp, async () => 'sent again')
    a.get('/other', { config: { rateLimit: { max: 3, timeWindow: '1 minute' } } }, async () => 'x')
  })
  const statuses = []
  for (const url of ['/otp/send', '/otp/resend', '/otp/send', '/otp/resend', '/other'])
    statuses.push((await hit(app, url)).status)
  expect(statuses).toEqual([200, 200, 200, 429, 200])
})

test('a store call that takes longer than a second counts as a store failure (skipOnError lets it through)', async () => {
  jest.useRealTimers()
  class HungStore implements PeerStore {
    incr() {}
    child() {
      return this
    }
  }
  const app = await build({ max: 1, store: HungStore, skipOnError: true })
  const started = Date.now()
  const res = await hit(app)
  expect([res.status, limitHeaders(res)]).toEqual([200, '1 1 0 -'])
  expect(Date.now() - started).toBeGreaterThanOrEqual(1000)
})

test('fastify.createRateLimit() checks a request; { increment: false } reads without counting', async () => {
  const app = await build({ global: false, max: 2, timeWindow: 10_000 }, (a) => {
    const check = a.createRateLimit()
    a.get('/peek', async (req) => check(req, { increment: false }))
    a.get('/count', async (req) => check(req))
  })
  expect((await hit(app, '/peek')).body).toEqual({
    isAllowed: false,
    key: '127.0.0.1',
    max: 2,
    timeWindow: 10_000,
    remaining: 2,
    ttl: 0,
    ttlInSeconds: 0,
    isExceeded: false,
    isBanned: false,
  })
  await hit(app, '/count')
  jest.setSystemTime(T0 + 1000)
  expect((await hit(app, '/peek')).body).toMatchObject({
    remaining: 1,
    ttl: 9000,
    isExceeded: false,
  })
  expect((await hit(app, '/peek')).body).toMatchObject({
    remaining: 1,
    ttl: 9000,
    isExceeded: false,
  })
})

test('fastify.rateLimit(options) is a hook with its own counter', async () => {
  const app = await build({ global: false, max: 100 }, (a) => {
    a.get('/', { onRequest: a.rateLimit({ max: 1, timeWindow: 5000 }) }, async () => 'hello')
    a.get('/free', async () => 'free')
  })
  expect(limitHeaders(await hit(app))).toBe('1 0 5 -')
  expect((await hit(app)).status).toBe(429)
  expect(limitHeaders(await hit(app, '/free'))).toBe('- - - -')
})

test('registering the plugin twice does not throw; each registration limits its routes', async () => {
  const app = Fastify()
  apps.push(app)
  await app.register(rateLimit, { global: false, max: 1 })
  await app.register(rateLimit, { global: false, max: 1 })
  app.get('/', { config: { rateLimit: { max: 3 } } }, async () => 'hello')
  await app.listen({ port: 0, host: '127.0.0.1' })
  expect(limitHeaders(await hit(app))).toBe('3 2 60 -')
})

test('enableDraftSpec names the headers ratelimit-*; addHeaders: { name: false } leaves one out', async () => {
  const app = await build({
    max: 1,
    enableDraftSpec: true,
    addHeaders: { 'retry-after': false },
    addHeadersOnExceeding: { 'ratelimit-reset': false },
  })
  const admitted = await hit(app)
  expect([admitted.headers['ratelimit-limit'], admitted.headers['ratelimit-remaining']]).toEqual([
    '1',
    '0',
  ])
  expect([admitted.headers['ratelimit-reset'], admitted.headers['x-ratelimit-limit']]).toEqual([
    undefined,
    undefined,
  ])
  const refused = await hit(app)
  expect([
    refused.status,
    refused.headers['ratelimit-reset'],
    refused.headers['retry-after'],
  ]).toEqual([429, '60', undefined])
})

test('a route config.rateLimit other than an object or false throws at registration', async () => {
  const app = Fastify()
  apps.push(app)
  await app.register(rateLimit, { max: 1 })
  expect(() => app.get('/', { config: { rateLimit: 5 as never } }, async () => 'x')).toThrow(
    'Unknown value for route rate-limit configuration',
  )
  expect(() =>
    app.get('/g', { config: { rateLimit: { groupId: 7 as never } } }, async () => 'x'),
  ).toThrow('groupId must be a string')
})

test('normalizeIP: IPv4 as is, mapped IPv6 as IPv4, IPv6 as the start of its /64 (or given) network', () => {
  expect(normalizeIP('Example.COM')).toBe('example.com')
  expect(normalizeIP('::ffff:c000:0201')).toBe('192.0.2.1')
  expect(normalizeIP('2001:0DB8:ABCD:0012:0000:0000:0000:0001')).toBe('2001:db8:abcd:12::')
  expect(normalizeIP('2001:db8:abcd:12::1', 48)).toBe('2001:db8:abcd::')
  expect(normalizeIP('2001:db8:abcd:12::1', 128)).toBe('2001:db8:abcd:12::1')
})

describe('on Redis (redis: client)', () => {
  let server: RedisServer
  const clients: Redis[] = []
  beforeAll(async () => {
    server = await startRedis()
  })
  afterAll(async () => {
    for (const client of clients) {
      if (client.status === 'ready') await client.quit()
      else client.disconnect()
    }
    await server.stop()
  })
  const client = () => {
    const made = new Redis({ host: server.host, port: server.port, maxRetriesPerRequest: 1 })
    clients.push(made)
    return made
  }

  test('two apps on one Redis share each key’s count, under nameSpace', async () => {
    jest.useRealTimers()
    const redis = client()
    const options = { max: 2, timeWindow: 60_000, redis, nameSpace: 'compat-share-', ...byHeader }
    const first = await build(options)
    const second = await build(options)
    expect(limitHeaders(await hit(first, '/', { 'x-client': 'r1' }))).toBe('2 1 60 -')
    expect(limitHeaders(await hit(second, '/', { 'x-client': 'r1' }))).toBe('2 0 60 -')
    expect((await hit(first, '/', { 'x-client': 'r1' })).status).toBe(429)
    expect((await redis.keys('compat-share-*')).length).toBeGreaterThan(0)
  })

  test("a store failure answers 500 with the client's own error; skipOnError lets the request through", async () => {
    jest.useRealTimers()
    const redis = client()
    const failing = await build({ max: 2, redis })
    const passing = await build({ max: 2, redis, skipOnError: true })
    redis.disconnect()
    const failed = await hit(failing)
    expect([failed.status, failed.body]).toEqual([
      500,
      { statusCode: 500, error: 'Internal Server Error', message: 'Connection is closed.' },
    ])
    expect(limitHeaders(await hit(passing))).toBe('2 2 0 -')
  })
})
