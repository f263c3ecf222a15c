import { Hono, type Context } from 'hono'
import { getConnInfo } from '@hono/node-server/conninfo'
import { resetAddressWarnings } from '@sluice/fetch'
import {
  captureLogger,
  fetchScenarioOptions,
  runHttpScenarios,
  scenarioIp,
  serveFetch,
  type AdapterHarness,
} from '@sluice/testkit'
import {
  ConfigError,
  headerKey,
  rateLimiter,
  type HonoRateLimitOptions,
  type RateLimitVariables,
} from '@sluice/hono'

// The shared scenarios through @hono/node-server with real sockets, the address from Hono's
// own getConnInfo helper for Node (or, with trustProxy, the last X-Forwarded-For hop).
const harness: AdapterHarness = {
  name: '@sluice/hono over @hono/node-server',
  resetStyle: 'epoch',
  async start(options, setup = {}) {
    // The scenarios' own view of the address; the limiter finds it with its real trustProxy.
    const socketIp = (c: Context) => getConnInfo(c).remote.address
    const ip = (c: Context) => scenarioIp(c.req.raw, socketIp(c), setup.trustProxy === true)
    const app = new Hono<{ Variables: RateLimitVariables }>()
    const middleware = rateLimiter({
      ...fetchScenarioOptions<Context, HonoRateLimitOptions>(options, (c) => c.req.raw, ip),
      getConnInfo,
      trustProxy: setup.trustProxy === true ? 'loopback' : false,
    })
    app.use(middleware)
    app.get('/', (c) => {
      setup.onHandled?.()
      return c.json({ ok: true, remaining: c.get('rateLimit')?.remaining ?? null })
    })
    app.get('/bad', (c) => {
      setup.onHandled?.()
      return c.json({ ok: false }, 400)
    })
    return serveFetch(app.fetch, middleware.close)
  },
}

runHttpScenarios(harness)

describe('@sluice/hono through app.request()', () => {
  const clock = () => 60_000 * 1000 + 40_000

  function app(options: HonoRateLimitOptions) {
    const hono = new Hono<{ Variables: RateLimitVariables }>()
    hono.use(rateLimiter({ clock, ...options }))
    hono.get('/', (c) => c.text(`left ${c.get('rateLimit')?.remaining}`))
    return hono
  }

  test('app.use(rateLimiter(...)): the headers, the decision on the context, then 429', async () => {
    const hono = app({
      limit: 2,
      window: '1m',
      algorithm: 'fixed-window',
      key: headerKey('x-api-key'),
    })
    const ask = () => hono.request('/', { headers: { 'x-api-key': 'k1' } })
    const first = await ask()
    expect(first.status).toBe(200)
    expect(await first.text()).toBe('left 1')
    expect(first.headers.get('x-ratelimit-limit')).toBe('2')
    expect(first.headers.get('x-ratelimit-remaining')).toBe('1')
    expect(first.headers.get('x-ratelimit-reset')).toBe(String(60_000 + 60))
    expect(await (await ask()).text()).toBe('left 0')
    const refused = await ask()
    expect(refused.status).toBe(429)
    expect(refused.headers.get('retry-after')).toBe('20')
    expect(await refused.json()).toEqual({
      error: 'Too Many Requests',
      message: 'Too many requests, please try again in 20 seconds.',
      retryAfter: 20,
    })
  })

  test('option functions receive the Context (c.req, c.get)', async () => {
    type AppEnv = { Variables: RateLimitVariables & { user: string } }
    const hono = new Hono<AppEnv>()
    hono.use(async (c, next) => {
      c.set('user', c.req.header('x-user') ?? 'anonymous')
      await next()
    })
    hono.use(
      rateLimiter<AppEnv>({ clock, limit: 1, window: '1m', key: (c) => `user:${c.get('user')}` }),
    )
    // The app's Env reaches the option functions: a misspelt variable does not compile.
    // @ts-expect-error 'usr' is not a variable of AppEnv
    rateLimiter<AppEnv>({ key: (c) => `user:${c.get('usr')}` })
    hono.get('/', (c) => c.text('ok'))
    const as = (user: string) => hono.request('/', { headers: { 'x-user': user } })
    expect((await as('ann')).status).toBe(200)
    expect((await as('ann')).status).toBe(429)
    expect((await as('bob')).status).toBe(200)
  })

  test('without getConnInfo, a key or rules, the middleware is refused at creation, naming the fix', () => {
    expect(() => rateLimiter({ limit: 1, window: '1m' })).toThrow(ConfigError)
    expect(() => rateLimiter({ limit: 1, window: '1m' })).toThrow(
      /without `getConnInfo` no request has a client address[\s\S]*rateLimiter\(\{ getConnInfo \}\)[\s\S]*'hono\/vercel'/,
    )
    expect(() => rateLimiter({ limit: 1, trustProxy: 1, key: () => 'k' })).toThrow(
      /`trustProxy` needs `getConnInfo`/,
    )
    expect(() => rateLimiter({ limit: 1, key: () => 'k' })).not.toThrow()
  })

  test('a request without an address goes through unlimited, with one warning per process naming the fix', async () => {
    resetAddressWarnings()
    const logger = captureLogger()
    const hono = new Hono()
    // A key that falls back to the address, and a getConnInfo that finds none (app.request).
    const noAddress = () => ({ remote: { address: undefined } })
    hono.use(rateLimiter({ limit: 1, key: headerKey('x-api-key'), getConnInfo: noAddress, logger }))
    hono.get('/', (c) => c.text('ok'))
    for (let i = 0; i < 3; i++) {
      const response = await hono.request('/')
      expect(response.status).toBe(200)
      expect(response.headers.get('x-ratelimit-limit')).toBeNull()
    }
    // With a key, the limit holds.
    expect((await hono.request('/', { headers: { 'x-api-key': 'a' } })).status).toBe(200)
    expect((await hono.request('/', { headers: { 'x-api-key': 'a' } })).status).toBe(429)
    expect(logger.warnings).toHaveLength(1)
    expect(logger.warnings[0]).toMatch(/Hono rateLimit: a request has no client address/)
    expect(logger.warnings[0]).toMatch(/getConnInfo from 'hono\/bun'/)
    expect(logger.warnings[0]).not.toMatch(/ip: \(request\)/)
    expect(logger.warnings[0]).toMatch(/onMissingAddress: 'skip'/)
  })

  test("getConnInfo that throws (Node's under app.request: no socket) is one warning of its own, not a 500", async () => {
    resetAddressWarnings()
    const logger = captureLogger()
    const hono = new Hono()
    hono.use(rateLimiter({ limit: 1, getConnInfo, logger }))
    hono.get('/', (c) => c.text('ok'))
    expect((await hono.request('/')).status).toBe(200)
    expect((await hono.request('/')).status).toBe(200)
    expect(logger.warnings).toEqual([
      expect.stringMatching(
        /Hono rateLimit: `getConnInfo` threw \(Cannot read properties of undefined/,
      ),
    ])
    const strict = new Hono()
    strict.use(rateLimiter({ limit: 1, getConnInfo, onMissingAddress: 'throw', logger }))
    strict.get('/', (c) => c.text('ok'))
    expect((await strict.request('/')).status).toBe(500)
  })

  test('bad options are ConfigErrors at creation, naming the option and value', () => {
    expect(() => rateLimiter({ getConnInfo: 'x' as never })).toThrow(
      /`getConnInfo` must be a function.*got "x"/,
    )
    expect(() => rateLimiter({ limit: -1 })).toThrow(ConfigError)
  })
})

test('ipKey(getConnInfo) serves combineKeys with a token', async () => {
  const { combineKeys, ipKey } = await import('@sluice/hono')
  // A runtime's getConnInfo, here reading the address a test request names.
  const getConnInfo = (c: Context) => ({ remote: { address: c.req.header('x-ip') } })
  const hono = new Hono()
  hono.use(
    rateLimiter({
      limit: 1,
      window: '1m',
      key: combineKeys(ipKey(getConnInfo), headerKey('x-api-key')),
    }),
  )
  hono.get('/', (c) => c.text('ok'))
  const ask = (ip: string, token: string) =>
    hono.request('/', { headers: { 'x-ip': ip, 'x-api-key': token } })
  expect((await ask('10.0.0.1', 'a')).status).toBe(200)
  expect((await ask('10.0.0.1', 'a')).status).toBe(429)
  expect((await ask('10.0.0.1', 'b')).status).toBe(200)
  expect((await ask('10.0.0.2', 'a')).status).toBe(200)
})
