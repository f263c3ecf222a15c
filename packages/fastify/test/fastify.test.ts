import Fastify, { type FastifyInstance } from 'fastify'
import request from 'supertest'
import { captureLogger, runHttpScenarios, type AdapterHarness } from '@sluice/testkit'
import { resetProxyWarnings } from '@sluice/http'
import rateLimit, { rateLimit as named, type FastifyRateLimitOptions } from '@sluice/fastify'

const harness: AdapterHarness = {
  name: 'Fastify 5',
  resetStyle: 'delta',
  async start(options, setup = {}) {
    const app = Fastify({ trustProxy: setup.trustProxy ? '127.0.0.1' : false })
    try {
      await app.register(rateLimit, options)
    } catch (error) {
      await app.close()
      throw error
    }
    app.get('/', async (request) => {
      setup.onHandled?.()
      return { ok: true, remaining: request.rateLimit?.remaining ?? null }
    })
    app.get('/bad', async (_request, reply) => {
      setup.onHandled?.()
      reply.code(400)
      return { ok: false }
    })
    await app.listen({ port: 0, host: '127.0.0.1' })
    return { server: app.server, close: () => app.close() }
  },
}

runHttpScenarios(harness)

/**
 * One GET through a real socket. (fastify.inject cannot run under jest here: light-my-request
 * requires an ESM-only `cookie`.)
 */
async function hit(app: FastifyInstance, url: string, headers: Record<string, string> = {}) {
  if (!app.server.listening) await app.listen({ port: 0, host: '127.0.0.1' })
  const res = await request(app.server).get(url).set(headers)
  return { statusCode: res.status, headers: res.headers, json: () => res.body as unknown }
}

describe('Fastify 5: plugin specifics', () => {
  const apps: FastifyInstance[] = []
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()))
  })

  async function build(options: FastifyRateLimitOptions) {
    const app = Fastify()
    apps.push(app)
    // Fixed windows on a minute-aligned fake clock: every wait below is exactly 60 s.
    await app.register(rateLimit, {
      logger: captureLogger(),
      algorithm: 'fixed-window',
      clock: () => 60_000 * 1000,
      ...options,
    })
    return app
  }

  test('default export and named rateLimit are the same plugin', () => {
    expect(named).toBe(rateLimit)
  })

  test('limit, window as a string, X-RateLimit-Reset in seconds, errors carry statusCode', async () => {
    const app = await build({ limit: 1, window: '1 minute' })
    app.get('/', async () => 'ok')
    await hit(app, '/')
    const res = await hit(app, '/')
    expect(res.statusCode).toBe(429)
    expect(Number(res.headers['x-ratelimit-reset'])).toBeLessThanOrEqual(60)
    expect(res.json()).toMatchObject({
      statusCode: 429,
      error: 'Too Many Requests',
      retryAfter: 60,
    })
  })

  test('setErrorHandler sees the rejection with its statusCode', async () => {
    const app = Fastify()
    apps.push(app)
    const seen: unknown[] = []
    app.setErrorHandler(async (error: { statusCode?: number }, _request, reply) => {
      seen.push(error.statusCode)
      reply.code(error.statusCode ?? 500)
      return { handled: true }
    })
    await app.register(rateLimit, { limit: 1, algorithm: 'fixed-window', clock: () => 60_000 })
    app.get('/', async () => 'ok')
    await hit(app, '/')
    const res = await hit(app, '/')
    expect(res.statusCode).toBe(429)
    expect(res.json()).toEqual({ handled: true })
    expect(res.headers['retry-after']).toBe('60')
    expect(seen).toEqual([429])
  })

  test("with Fastify's own error handler a 429 is sent directly: the same response, no log line per 429", async () => {
    const lines: Array<{ level: number; msg?: string; res?: { statusCode?: number } }> = []
    const stream = { write: (line: string) => void lines.push(JSON.parse(line)) }
    const app = Fastify({ logger: { level: 'info', stream } })
    apps.push(app)
    const errors: unknown[] = []
    app.addHook('onError', async (_request, _reply, error) => void errors.push(error))
    await app.register(rateLimit, { limit: 1, algorithm: 'fixed-window', clock: () => 60_000_000 })
    app.get('/', async () => 'ok')
    await hit(app, '/')
    const res = await hit(app, '/')
    expect(res.statusCode).toBe(429)
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8')
    expect(res.headers['retry-after']).toBe('60')
    expect(res.headers['x-ratelimit-retry-after']).toBe('60')
    expect(res.json()).toEqual({
      statusCode: 429,
      error: 'Too Many Requests',
      message: 'Too many requests, please try again in 60 seconds.',
      retryAfter: 60,
    })
    // Fastify's default handler would log each 429 at info level and run onError hooks.
    expect(
      lines.filter((line) => line.msg === 'Too many requests, please try again in 60 seconds.'),
    ).toEqual([])
    expect(errors).toEqual([])
    expect(lines.filter((line) => line.res?.statusCode === 429)).toHaveLength(1)
  })

  test('a route with its own errorHandler gets the rejection thrown to it', async () => {
    const app = Fastify()
    apps.push(app)
    await app.register(rateLimit, { limit: 1, algorithm: 'fixed-window', clock: () => 60_000_000 })
    const seen: unknown[] = []
    app.get('/', {
      errorHandler: (error: { statusCode?: number }, _request, reply) => {
        seen.push(error.statusCode)
        void reply.code(429).send({ mine: true })
      },
      handler: async () => 'ok',
    })
    app.get('/plain', async () => 'ok')
    await hit(app, '/')
    const res = await hit(app, '/')
    expect(res.statusCode).toBe(429)
    expect(res.json()).toEqual({ mine: true })
    expect(seen).toEqual([429])
    await hit(app, '/plain')
    expect((await hit(app, '/plain')).json()).toMatchObject({ error: 'Too Many Requests' })
  })

  test('errorResponseBuilder gets @fastify/rate-limit context; statusCode is added', async () => {
    const app = await build({
      limit: 1,
      errorResponseBuilder: (_request, context) => ({
        code: 'SLOW',
        after: context.after,
        max: context.max,
      }),
    })
    app.get('/', async () => 'ok')
    await hit(app, '/')
    const res = await hit(app, '/')
    expect(res.statusCode).toBe(429)
    expect(res.json()).toEqual({ statusCode: 429, code: 'SLOW', after: '60 seconds', max: 1 })
  })

  test('per-route config.rateLimit, false, and global: false', async () => {
    const app = await build({ global: false, limit: 1 })
    app.get('/free', async () => 'ok')
    app.get('/limited', { config: { rateLimit: { limit: 2 } } }, async () => 'ok')
    app.get('/off', { config: { rateLimit: false } }, async () => 'ok')
    for (let i = 0; i < 3; i++) expect((await hit(app, '/free')).statusCode).toBe(200)
    for (let i = 0; i < 3; i++) expect((await hit(app, '/off')).statusCode).toBe(200)
    expect((await hit(app, '/limited')).headers['x-ratelimit-limit']).toBe('2')
    expect((await hit(app, '/limited')).statusCode).toBe(200)
    expect((await hit(app, '/limited')).statusCode).toBe(429)
  })

  test('the global limit covers every route; per-route limits count apart', async () => {
    const app = await build({ limit: 2 })
    app.get('/a', async () => 'ok')
    app.get('/b', async () => 'ok')
    app.get('/own', { config: { rateLimit: { limit: 1 } } }, async () => 'ok')
    expect((await hit(app, '/a')).statusCode).toBe(200)
    expect((await hit(app, '/b')).statusCode).toBe(200)
    expect((await hit(app, '/a')).statusCode).toBe(429)
    expect((await hit(app, '/own')).statusCode).toBe(200)
    expect((await hit(app, '/own')).statusCode).toBe(429)
  })

  test('route `limits` replace the plugin-level limit options whole: no conflict with its window', async () => {
    const app = await build({ limit: 5, window: '1 minute', algorithm: 'gcra' })
    const limits = [
      { limit: 1, window: '1s' },
      { limit: 3, window: '1h' },
    ]
    app.get('/tiers', { config: { rateLimit: { limits } } }, async () => 'ok')
    // A route's limit keeps the plugin's window, as @fastify/rate-limit's routes do.
    app.get('/max', { config: { rateLimit: { limit: 1 } } }, async () => 'ok')
    const first = await hit(app, '/tiers')
    expect(first.statusCode).toBe(200)
    expect(first.headers['x-ratelimit-limit']).toBe('1')
    expect((await hit(app, '/tiers')).statusCode).toBe(429)
    const max = await hit(app, '/max')
    expect(max.headers['x-ratelimit-reset']).toBe('60')
    expect((await hit(app, '/max')).statusCode).toBe(429)
  })

  test('groupId shares one counter across the routes of a group', async () => {
    const app = await build({ global: false })
    const group = { config: { rateLimit: { limit: 2, groupId: 'reports' } } }
    app.get('/r1', group, async () => 'ok')
    app.get('/r2', group, async () => 'ok')
    app.get('/solo', { config: { rateLimit: { limit: 2 } } }, async () => 'ok')
    expect((await hit(app, '/r1')).statusCode).toBe(200)
    expect((await hit(app, '/r2')).statusCode).toBe(200)
    expect((await hit(app, '/r1')).statusCode).toBe(429)
    expect((await hit(app, '/r2')).statusCode).toBe(429)
    expect((await hit(app, '/solo')).statusCode).toBe(200)
  })

  test("the route's own hooks are preserved and run after the limit", async () => {
    const app = await build({ limit: 1 })
    const calls: string[] = []
    app.get(
      '/',
      {
        onRequest: async () => void calls.push('route onRequest'),
        preHandler: [async () => void calls.push('route preHandler')],
      },
      async () => 'ok',
    )
    expect((await hit(app, '/')).statusCode).toBe(200)
    expect(calls).toEqual(['route onRequest', 'route preHandler'])
    expect((await hit(app, '/')).statusCode).toBe(429)
    expect(calls).toHaveLength(2)
  })

  const STAGES = ['onRequest', 'preParsing', 'preValidation', 'preHandler'] as const
  test.each(STAGES)('hook: %s runs the limit at that stage of the lifecycle', async (hook) => {
    const app = await build({ limit: 1, hook })
    const seen: string[] = []
    app.get(
      '/',
      {
        onRequest: async () => void seen.push('onRequest'),
        preParsing: async (_request, _reply, payload) => {
          seen.push('preParsing')
          return payload
        },
        preValidation: async () => void seen.push('preValidation'),
        preHandler: async () => void seen.push('preHandler'),
      },
      async () => 'ok',
    )
    expect((await hit(app, '/')).statusCode).toBe(200)
    expect(seen).toEqual([...STAGES])
    seen.length = 0
    // Rejected: only the route's hooks of earlier stages ran; the limit comes first in its own.
    expect((await hit(app, '/')).statusCode).toBe(429)
    expect(seen).toEqual(STAGES.slice(0, STAGES.indexOf(hook)))
  })

  test('hook: preHandler, onExceeding, onExceeded, ban, addHeaders toggles', async () => {
    const events: string[] = []
    const app = await build({
      limit: 1,
      hook: 'preHandler',
      ban: 0,
      onExceeding: (_r, key) => void events.push(`ok ${key}`),
      onExceeded: (_r, key) => void events.push(`over ${key}`),
      addHeaders: { 'retry-after': false },
      addHeadersOnExceeding: { 'x-ratelimit-reset': false },
    })
    app.get('/', async () => 'ok')
    const ok = await hit(app, '/')
    expect(ok.headers['x-ratelimit-reset']).toBeUndefined()
    expect(ok.headers['x-ratelimit-limit']).toBe('1')
    const banned = await hit(app, '/')
    expect(banned.statusCode).toBe(403)
    expect(banned.headers['retry-after']).toBeUndefined()
    expect(banned.headers['x-ratelimit-reset']).toBe('60')
    expect(events).toEqual(['ok 127.0.0.1', 'over 127.0.0.1'])
  })

  test("key, allowList function, onStoreError: 'allow'", async () => {
    const app = await build({
      limit: 1,
      key: (request) => String(request.headers['x-user']),
      allowList: (_request, key) => key === 'admin',
    })
    app.get('/', async () => 'ok')
    expect((await hit(app, '/', { 'x-user': 'u' })).statusCode).toBe(200)
    expect((await hit(app, '/', { 'x-user': 'u' })).statusCode).toBe(429)
    for (let i = 0; i < 3; i++) {
      expect((await hit(app, '/', { 'x-user': 'admin' })).statusCode).toBe(200)
    }
    const failing = {
      consume: () => Promise.reject(new Error('down')),
      peek: () => Promise.reject(new Error('down')),
      refund: () => Promise.reject(new Error('down')),
      reset: () => Promise.reject(new Error('down')),
      penalize: () => Promise.reject(new Error('down')),
      block: () => Promise.reject(new Error('down')),
    }
    const open = await build({ store: failing, onStoreError: 'allow' })
    open.get('/', async () => 'ok')
    expect((await hit(open, '/')).statusCode).toBe(200)
  })

  test('a bad option fails at register, naming it as written; a bad route option when the route is added', async () => {
    await expect(build({ window: 'forever' })).rejects.toThrow(/`window` must be .*"forever"/)
    await expect(build({ hook: 'onSend' as 'onRequest' })).rejects.toThrow(/`hook`/)
    const app = await build({})
    // Fastify runs onRoute as the route is declared, so a bad route option throws right there.
    expect(() => app.get('/', { config: { rateLimit: { limit: -1 } } }, async () => 'ok')).toThrow(
      /`limit` must be a positive integer; got -1/,
    )
  })

  test("@fastify/rate-limit's names are a ConfigError naming Sluice's option and the compat entry", async () => {
    const peerNames: Array<[string, unknown, string]> = [
      ['max', 5, '`limit`'],
      ['timeWindow', '1 minute', '`window`'],
      ['keyGenerator', () => 'k', '`key`'],
      ['skipOnError', true, "`onStoreError: 'allow'`"],
    ]
    for (const [name, value, instead] of peerNames) {
      const thrown = await build({ [name]: value } as never).catch((error: Error) => error)
      expect((thrown as Error).name).toBe('ConfigError')
      expect((thrown as Error).message).toContain(`\`${name}\` is @fastify/rate-limit's name (got `)
      expect((thrown as Error).message).toContain(
        `use ${instead}, or import from \`@sluice/fastify/compat\` to keep @fastify/rate-limit's names and defaults`,
      )
    }
    // In a route's config too, when the route is added.
    const app = await build({})
    expect(() =>
      app.get('/', { config: { rateLimit: { max: 2 } as never } }, async () => 'ok'),
    ).toThrow(/`max` is @fastify\/rate-limit's name \(got 2\): use `limit`/)
  })

  test('trustProxy: 1 trusts no hop on Fastify 5.12: one bucket behind the proxy, warned with the fix', async () => {
    resetProxyWarnings()
    const logger = captureLogger()
    // Fastify's own types no longer accept a number; plain JavaScript (the old docs) still passes one.
    const app = Fastify({ trustProxy: 1 as unknown as string })
    apps.push(app)
    await app.register(rateLimit, { limit: 1, window: '1 minute', logger })
    app.get('/', async () => 'ok')
    expect((await hit(app, '/', { 'x-forwarded-for': '203.0.113.1' })).statusCode).toBe(200)
    // Another client behind the same proxy: Fastify still reports the proxy's address.
    expect((await hit(app, '/', { 'x-forwarded-for': '203.0.113.2' })).statusCode).toBe(429)
    expect(logger.warnings).toEqual([
      expect.stringMatching(
        /does not trust its sender \(127\.0\.0\.1\).*Fastify\(\{ trustProxy: '<your proxy's address or CIDR>' \}\)/,
      ),
    ])
  })

  test("trustProxy set to the proxy's address (as docs/proxies.md says) gives each client its bucket", async () => {
    resetProxyWarnings()
    const logger = captureLogger()
    const app = Fastify({ trustProxy: '127.0.0.1' })
    apps.push(app)
    await app.register(rateLimit, { limit: 1, window: '1 minute', logger })
    app.get('/', async () => 'ok')
    expect((await hit(app, '/', { 'x-forwarded-for': '203.0.113.1' })).statusCode).toBe(200)
    expect((await hit(app, '/', { 'x-forwarded-for': '203.0.113.2' })).statusCode).toBe(200)
    expect((await hit(app, '/', { 'x-forwarded-for': '203.0.113.1' })).statusCode).toBe(429)
    expect(logger.warnings).toEqual([])
  })

  test('trustProxy: true gets a one-time warning once a chain shows it trusts every hop', async () => {
    resetProxyWarnings()
    const logger = captureLogger()
    const app = Fastify({ trustProxy: true })
    apps.push(app)
    await app.register(rateLimit, { logger })
    app.get('/', async () => 'ok')
    await hit(app, '/', { 'x-forwarded-for': '1.1.1.1, 2.2.2.2' })
    await hit(app, '/', { 'x-forwarded-for': '1.1.1.1, 2.2.2.2' })
    expect(logger.warnings).toHaveLength(1)
    expect(logger.warnings[0]).toMatch(/trusts every proxy/)
  })
})
