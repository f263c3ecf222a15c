import {
  captureLogger,
  fetchScenarioOptions,
  runHttpScenarios,
  scenarioIp,
  serveFetch,
  type AdapterHarness,
  type NodeBindings,
} from '@sluice/testkit'
import {
  ConfigError,
  rateLimit,
  resetAddressWarnings,
  type FetchRateLimitOptions,
} from '@sluice/fetch'

// The shared scenarios over real sockets: @hono/node-server's listener turns each Node request
// into a Fetch Request (its signal aborts when the client goes away) and sends the Response.
const harness: AdapterHarness = {
  name: '@sluice/fetch over @hono/node-server',
  resetStyle: 'epoch',
  async start(options, setup = {}) {
    const socketIps = new WeakMap<Request, string | undefined>()
    // The scenarios' own view of the address; the limiter finds it with its real trustProxy.
    const ip = (request: Request) =>
      scenarioIp(request, socketIps.get(request), setup.trustProxy === true)
    const limited = rateLimit({
      ...fetchScenarioOptions<Request, FetchRateLimitOptions>(options, (r) => r, ip),
      ip: (request) => socketIps.get(request),
      trustProxy: setup.trustProxy === true ? 'loopback' : false,
    })
    return serveFetch((request: Request, env: NodeBindings) => {
      socketIps.set(request, env.incoming.socket.remoteAddress)
      return limited(request, (req, decision) => {
        setup.onHandled?.()
        const path = new URL(req.url).pathname
        if (path === '/bad') return Response.json({ ok: false }, { status: 400 })
        return Response.json({ ok: true, remaining: decision?.remaining ?? null })
      })
    }, limited.close)
  },
}

runHttpScenarios(harness)

describe('@sluice/fetch with real Requests', () => {
  const clock = () => 60_000 * 1000 + 40_000
  const ok = () => new Response('hello', { status: 200 })
  const request = (ip = '198.51.100.7') => {
    const req = new Request('http://example.test/')
    Object.defineProperty(req, 'ip', { value: ip })
    return req
  }

  test('limits by the client address, with the Node adapters’ headers and 429 body', async () => {
    const limited = rateLimit({ limit: 2, window: '1m', algorithm: 'fixed-window', clock })
    const first = await limited(request(), ok)
    expect(first.status).toBe(200)
    expect(await first.text()).toBe('hello')
    expect(first.headers.get('x-ratelimit-limit')).toBe('2')
    expect(first.headers.get('x-ratelimit-remaining')).toBe('1')
    expect(first.headers.get('x-ratelimit-reset')).toBe(String(60_000 + 60))
    await limited(request(), ok)
    const refused = await limited(request(), ok)
    expect(refused.status).toBe(429)
    expect(refused.headers.get('retry-after')).toBe('20')
    expect(refused.headers.get('content-type')).toBe('application/json; charset=utf-8')
    expect(await refused.json()).toEqual({
      error: 'Too Many Requests',
      message: 'Too many requests, please try again in 20 seconds.',
      retryAfter: 20,
    })
    expect((await limited(request('198.51.100.8'), ok)).status).toBe(200)
  })

  test('check() answers the decision and the headers; the refusal is ready to send', async () => {
    const limited = rateLimit({ limit: 1, window: '1m', algorithm: 'fixed-window', clock })
    const passed = await limited.check(request())
    expect(passed.allowed).toBe(true)
    expect(passed.response).toBeUndefined()
    expect(passed.decision).toMatchObject({ allowed: true, limit: 1, remaining: 0 })
    expect(passed.headers).toEqual([
      ['X-RateLimit-Limit', '1'],
      ['X-RateLimit-Remaining', '0'],
      ['X-RateLimit-Reset', String(60_000 + 60)],
    ])
    const refused = await limited.check(request())
    expect(refused.allowed).toBe(false)
    expect(refused.response!.status).toBe(429)
    expect(refused.response!.headers.get('retry-after')).toBe('20')
  })

  test('check().finish(response) gives a failed request its charge back (skipFailedRequests)', async () => {
    const limited = rateLimit({ limit: 1, window: '1m', clock, skipFailedRequests: true })
    const first = await limited.check(request())
    first.finish(new Response(null, { status: 500 }))
    await new Promise((resolve) => setTimeout(resolve, 5))
    const second = await limited.check(request())
    expect(second.allowed).toBe(true)
    second.finish(new Response(null, { status: 200 }))
    await new Promise((resolve) => setTimeout(resolve, 5))
    expect((await limited.check(request())).allowed).toBe(false)
  })

  test('an immutable Response (as fetch() returns) is copied to carry the headers', async () => {
    const limited = rateLimit({ limit: 5, window: '1m', clock })
    const redirect = await limited(request(), () => Response.redirect('http://example.test/a', 302))
    expect(redirect.status).toBe(302)
    expect(redirect.headers.get('location')).toBe('http://example.test/a')
    expect(redirect.headers.get('x-ratelimit-remaining')).toBe('4')
  })

  test('the `ip` option keys requests; headerKey reads Fetch headers', async () => {
    const { headerKey } = await import('@sluice/fetch')
    const byIp = rateLimit({ limit: 1, window: '1m', clock, ip: (r) => r.headers.get('x-ip') })
    const from = (ip: string) => new Request('http://example.test/', { headers: { 'x-ip': ip } })
    expect((await byIp(from('10.0.0.1'), ok)).status).toBe(200)
    expect((await byIp(from('10.0.0.1'), ok)).status).toBe(429)
    expect((await byIp(from('10.0.0.2'), ok)).status).toBe(200)
    const byToken = rateLimit({ limit: 1, window: '1m', clock, key: headerKey('x-api-key') })
    const token = (t: string) =>
      new Request('http://example.test/', { headers: { 'x-api-key': t } })
    expect((await byToken(token('a'), ok)).status).toBe(200)
    expect((await byToken(token('a'), ok)).status).toBe(429)
    expect((await byToken(token('b'), ok)).status).toBe(200)
  })

  test('a request without a client address goes through unlimited, one warning per process naming the fix', async () => {
    resetAddressWarnings()
    const logger = captureLogger()
    const limited = rateLimit({ limit: 1, window: '1m', clock, logger })
    for (let i = 0; i < 3; i++) {
      const response = await limited(new Request('http://example.test/'), ok)
      expect(response.status).toBe(200)
      expect(response.headers.get('x-ratelimit-limit')).toBeNull()
    }
    // An `ip` answering undefined (the docs' x-real-ip off Vercel) is the same case: no new warning.
    const offVercel = rateLimit({ limit: 1, clock, logger, ip: (r) => r.headers.get('x-real-ip') })
    expect((await offVercel(new Request('http://example.test/'), ok)).status).toBe(200)
    expect(logger.warnings).toHaveLength(1)
    expect(logger.warnings[0]).toMatch(
      /Fetch rateLimit: a request has no client address[\s\S]*Bun\.serve: ip: \(request\) => server\.requestIP\(request\)\?\.address[\s\S]*cf-connecting-ip[\s\S]*onMissingAddress: 'skip'/,
    )
    // Clients with an address are still limited, each on its own.
    expect((await limited(request('198.51.100.1'), ok)).status).toBe(200)
    expect((await limited(request('198.51.100.1'), ok)).status).toBe(429)
    expect((await limited(request('198.51.100.2'), ok)).status).toBe(200)
    // A key that answers needs no address.
    const keyed = rateLimit({ limit: 1, window: '1m', clock, key: () => 'user:1' })
    expect((await keyed(new Request('http://example.test/'), ok)).status).toBe(200)
    expect((await keyed(new Request('http://example.test/'), ok)).status).toBe(429)
  })

  test("onMissingAddress: 'throw' rejects with the error naming the fix", async () => {
    const limited = rateLimit({ limit: 1, clock, onMissingAddress: 'throw' })
    await expect(limited(new Request('http://example.test/'), ok)).rejects.toThrow(ConfigError)
    await expect(limited(new Request('http://example.test/'), ok)).rejects.toThrow(
      /no client address[\s\S]*cf-connecting-ip/,
    )
    expect(() => rateLimit({ onMissingAddress: 'deny' as never })).toThrow(
      /`onMissingAddress` must be 'skip' or 'throw'; got "deny"/,
    )
  })

  test('an ip answering a Promise or an object gets its own message, each warned once', async () => {
    resetAddressWarnings()
    const logger = captureLogger()
    const info = { address: '198.51.100.1', family: 'IPv4', port: 5000 }
    const asPromise = rateLimit({ clock, logger, ip: (async () => '198.51.100.1') as never })
    const asObject = rateLimit({ clock, logger, ip: (() => info) as never })
    for (let i = 0; i < 2; i++) {
      expect((await asPromise(new Request('http://example.test/'), ok)).status).toBe(200)
      expect((await asObject(new Request('http://example.test/'), ok)).status).toBe(200)
    }
    expect(logger.warnings).toEqual([
      expect.stringMatching(/`ip` returned a Promise: it must return the address itself/),
      expect.stringMatching(
        /`ip` returned an object \(with address, family, port\): it must return the address as a string, e\.g\. server\.requestIP\(request\)\?\.address/,
      ),
    ])
    expect(logger.warnings.join()).not.toMatch(/a request has no client address/)
  })

  test('bad options are ConfigErrors at creation, naming the option and value', () => {
    // Peer option names belong to the Node adapters (docs/redis.md): refused here by name.
    expect(() => rateLimit({ max: 100 } as never)).toThrow(/unknown option `max`/)
    expect(() => rateLimit({ windowMs: 60_000 } as never)).toThrow(/unknown option `windowMs`/)
    expect(() => rateLimit({ ip: 'x' as never })).toThrow(
      /`ip` must be a function of the request.*got "x"/,
    )
    expect(() => rateLimit({ limit: 0 })).toThrow(ConfigError)
    expect(() => rateLimit({ windowMs: 1 } as never)).toThrow(/windowMs/)
  })

  test('a throwing handler rejects, and counts as a failure for skipFailedRequests', async () => {
    const limited = rateLimit({ limit: 1, window: '1m', clock, skipFailedRequests: true })
    await expect(
      limited(request(), () => {
        throw new Error('boom')
      }),
    ).rejects.toThrow('boom')
    await new Promise((resolve) => setTimeout(resolve, 5))
    expect((await limited(request(), ok)).status).toBe(200)
  })
})

test('requestWasSuccessful gets the handler’s Response; a non-function is a ConfigError', async () => {
  const seen: number[] = []
  const limited = rateLimit({
    limit: 1,
    window: '1m',
    key: () => 'k',
    skipSuccessfulRequests: true,
    requestWasSuccessful: (_request, response) => {
      seen.push(response.status)
      return response.status === 201
    },
  })
  const created = () => new Response(null, { status: 201 })
  expect((await limited(new Request('http://example.test/'), created)).status).toBe(201)
  await new Promise((resolve) => setTimeout(resolve, 5))
  expect((await limited(new Request('http://example.test/'), () => new Response('x'))).status).toBe(
    200,
  )
  await new Promise((resolve) => setTimeout(resolve, 5))
  expect((await limited(new Request('http://example.test/'), created)).status).toBe(429)
  expect(seen).toEqual([201, 200])
  expect(() => rateLimit({ requestWasSuccessful: 1 as never })).toThrow(
    /`requestWasSuccessful` must be a function; got 1/,
  )
})

test('ipKey(ip) serves combineKeys: the address (IPv6 by /64) beside a token; none is not limited', async () => {
  const { combineKeys, headerKey, ipKey } = await import('@sluice/fetch')
  const seen: string[] = []
  const byBoth = combineKeys(
    ipKey((r) => r.headers.get('x-ip')),
    headerKey('x-api-key'),
  )
  const limited = rateLimit({
    limit: 1,
    window: '1m',
    key: async (request) => {
      const key = await byBoth(request)
      seen.push(String(key))
      return key
    },
  })
  const ask = (headers: Record<string, string>) =>
    limited(new Request('http://example.test/', { headers }), () => new Response('ok'))
  expect((await ask({ 'x-ip': '2001:db8:1:2::1', 'x-api-key': 't' })).status).toBe(200)
  expect((await ask({ 'x-ip': '2001:db8:1:2::99', 'x-api-key': 't' })).status).toBe(429)
  expect((await ask({ 'x-ip': '2001:db8:1:2::1' })).status).toBe(200)
  expect(seen).toEqual([
    '2001:db8:1:2::/64|x-api-key:t',
    '2001:db8:1:2::/64|x-api-key:t',
    '2001:db8:1:2::/64|-',
  ])
  // No address: through unlimited (onMissingAddress: 'skip'), never a bucket shared by all.
  const unlimited = await ask({ 'x-api-key': 't' })
  expect(unlimited.status).toBe(200)
  expect(unlimited.headers.get('x-ratelimit-limit')).toBeNull()
  expect(() => ipKey('x' as never)).toThrow(/`ipKey\(ip\)` must be a function of the request/)
})
