import Koa from 'koa'
import request from 'supertest'
import { captureLogger, listen, runHttpScenarios, type AdapterHarness } from '@sluice/testkit'
import { rateLimit, type KoaRateLimitOptions } from '@sluice/koa'

// koa@2 is installed under the alias `koa2`; its middleware API is the same.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const Koa2 = require('koa2') as typeof Koa

function harness(name: string, App: typeof Koa): AdapterHarness {
  return {
    name,
    resetStyle: 'epoch',
    async start(options, setup = {}) {
      const app = new App()
      app.silent = true
      if (setup.trustProxy) {
        app.proxy = true
        app.maxIpsCount = 1
      }
      const middleware = rateLimit(options)
      app.use(middleware)
      app.use(async (ctx) => {
        setup.onHandled?.()
        if (ctx.path === '/bad') {
          ctx.status = 400
          ctx.body = { ok: false }
        } else {
          ctx.body = { ok: true, remaining: ctx.state.rateLimit?.remaining ?? null }
        }
      })
      const served = await listen(app.callback())
      return {
        server: served.server,
        close: () => {
          middleware.close()
          return served.close()
        },
      }
    },
  }
}

runHttpScenarios(harness('Koa 3', Koa))
runHttpScenarios(harness('Koa 2', Koa2))

describe.each([
  ['Koa 3', Koa],
  ['Koa 2', Koa2],
])('%s: the middleware options', (_name, App) => {
  function app(options: KoaRateLimitOptions, upstream?: Koa.Middleware) {
    const server = new App()
    server.silent = true
    if (upstream) server.use(upstream)
    server.use(rateLimit({ logger: captureLogger(), ...options }))
    server.use(async (ctx) => {
      ctx.body = 'ok'
    })
    return server.callback()
  }

  test('window, limit, key, message, statusCode', async () => {
    const server = app({
      window: 60_000,
      limit: 1,
      // A still clock: a minute boundary between the two requests would weigh the first below 1.
      clock: () => 1_700_000_030_000,
      key: (ctx) => String(ctx.get('x-user')),
      message: 'Sometimes You Just Have to Slow Down.',
      statusCode: 420,
    })
    const ok = await request(server).get('/').set('x-user', 'a').expect(200)
    expect(ok.headers['x-ratelimit-limit']).toBe('1')
    expect(ok.headers['x-ratelimit-remaining']).toBe('0')
    const limited = await request(server).get('/').set('x-user', 'a').expect(420)
    expect(limited.body.message).toBe('Sometimes You Just Have to Slow Down.')
    await request(server).get('/').set('x-user', 'b').expect(200)
  })

  test('the key is the address ctx.request.ip gives: the socket, one set upstream, a proxy header', async () => {
    // Upstream, as a custom proxy handler would: sets ctx.request.ip, or only reads ctx.ip.
    const upstream: Koa.Middleware = async (ctx, next) => {
      const given = ctx.get('x-set-ip')
      if (given !== '') ctx.request.ip = given
      if (ctx.get('x-read-ip') !== '') expect(ctx.ip).not.toBe('')
      await next()
    }
    const server = app({ window: '1m', limit: 1, algorithm: 'fixed-window' }, upstream)
    await request(server).get('/').expect(200)
    await request(server).get('/').expect(429)
    // Read upstream first (Koa keeps it): still the socket's address, still limited.
    await request(server).get('/').set('x-read-ip', '1').expect(429)
    // Set upstream: that address is the key, its own bucket.
    await request(server).get('/').set('x-set-ip', '203.0.113.9').expect(200)
    await request(server).get('/').set('x-set-ip', '203.0.113.9').expect(429)
    await request(server).get('/').set('x-set-ip', '203.0.113.10').expect(200)
    // A proxy header counts only where the app trusts proxies.
    await request(server).get('/').set('x-forwarded-for', '198.51.100.1').expect(429)
    const proxied = new App()
    proxied.silent = true
    proxied.proxy = true
    proxied.use(rateLimit({ logger: captureLogger(), window: '1m', limit: 1 }))
    proxied.use(async (ctx) => {
      ctx.body = 'ok'
    })
    const behind = proxied.callback()
    await request(behind).get('/').set('x-forwarded-for', '198.51.100.1').expect(200)
    await request(behind).get('/').set('x-forwarded-for', '198.51.100.1').expect(429)
    await request(behind).get('/').set('x-forwarded-for', '198.51.100.2').expect(200)
  })

  test('the 429 body is JSON text; an upstream middleware reads the decision from ctx.state', async () => {
    const server = app(
      { window: 60_000, limit: 1, algorithm: 'fixed-window', clock: () => 60_000 * 1000 },
      async (ctx, next) => {
        await next()
        if (ctx.status === 429) {
          expect(typeof ctx.body).toBe('string')
          ctx.body = {
            wrapped: JSON.parse(ctx.body as string),
            wait: ctx.state.rateLimit.retryAfterMs,
          }
        }
      },
    )
    await request(server).get('/').expect(200)
    const res = await request(server).get('/').expect(429)
    expect(res.body).toEqual({
      wrapped: {
        error: 'Too Many Requests',
        message: 'Too many requests, please try again in 60 seconds.',
        retryAfter: 60,
      },
      wait: 60_000,
    })
  })

  test('a 429 is sent as application/json, the same text for the same wait', async () => {
    const server = app({
      window: 60_000,
      limit: 1,
      algorithm: 'fixed-window',
      clock: () => 60_000 * 1000,
    })
    await request(server).get('/').expect(200)
    const first = await request(server).get('/').expect(429)
    const second = await request(server).get('/').expect(429)
    expect(first.headers['content-type']).toBe('application/json; charset=utf-8')
    expect(first.text).toBe(
      '{"error":"Too Many Requests","message":"Too many requests, please try again in 60 seconds.","retryAfter":60}',
    )
    expect(second.text).toBe(first.text)
  })

  test('allowList/denyList functions and every header off', async () => {
    const server = app({
      limit: 1,
      legacyHeaders: false,
      standardHeaders: false,
      retryAfterHeader: false,
      allowList: (ctx) => ctx.get('x-vip') === '1',
      denyList: (ctx) => ctx.get('x-bad') === '1',
    })
    const ok = await request(server).get('/').expect(200)
    expect(ok.headers['x-ratelimit-limit']).toBeUndefined()
    for (let i = 0; i < 3; i++) await request(server).get('/').set('x-vip', '1').expect(200)
    await request(server).get('/').set('x-bad', '1').expect(403)
    const limited = await request(server).get('/').expect(429)
    expect(limited.headers['retry-after']).toBeUndefined()
  })

  test('throw: true rejects through ctx.throw, headers on the error', async () => {
    const caught: number[] = []
    const server = app({ limit: 1, throw: true }, async (ctx, next) => {
      try {
        await next()
      } catch (error) {
        const status = (error as { status: number }).status
        caught.push(status)
        throw error
      }
    })
    await request(server).get('/').expect(200)
    const res = await request(server).get('/').expect(429)
    expect(res.text).toMatch(/^Too many requests, please try again in \d+ seconds\.$/)
    expect(res.headers['retry-after']).toMatch(/^\d+$/)
    expect(res.text).toContain(`in ${res.headers['retry-after']} seconds`)
    expect(res.headers['x-ratelimit-remaining']).toBe('0')
    expect(caught).toEqual([429])
  })

  test('handler answers rejections itself', async () => {
    const server = app({
      limit: 1,
      algorithm: 'fixed-window',
      clock: () => 60_000 * 1000,
      handler: (ctx, decision) => {
        ctx.status = 429
        ctx.body = `retry in ${Math.ceil(decision.retryAfterMs / 1000)}`
      },
    })
    await request(server).get('/').expect(200)
    const res = await request(server).get('/').expect(429)
    expect(res.text).toBe('retry in 60')
  })

  test("koa-ratelimit's names are a ConfigError naming Sluice's option and the compat entry", () => {
    const peerNames: Array<[string, unknown, string]> = [
      ['duration', 60_000, '`window`'],
      ['max', 5, '`limit`'],
      ['id', () => 'k', '`key`'],
      ['allowlist', [], '`allowList`'],
      ['whitelist', [], '`allowList`'],
      ['blocklist', [], '`denyList`'],
      ['blacklist', [], '`denyList`'],
      ['errorMessage', 'slow down', '`message`'],
      ['status', 420, '`statusCode`'],
      ['disableHeader', true, '`legacyHeaders: false'],
      ['headers', { total: 'Total' }, '`legacyHeaders`'],
    ]
    for (const [name, value, instead] of peerNames) {
      let thrown: Error | undefined
      try {
        rateLimit({ [name]: value } as never)
      } catch (error) {
        thrown = error as Error
      }
      expect(thrown?.name).toBe('ConfigError')
      expect(thrown?.message).toContain(`\`${name}\` is koa-ratelimit's name (got `)
      expect(thrown?.message).toContain(`use ${instead}`)
      expect(thrown?.message).toContain('or import from `@sluice/koa/compat`')
    }
    expect(() => rateLimit({ max: 0 } as never)).toThrow(/`max` is koa-ratelimit's name \(got 0\)/)
    expect(() => rateLimit({ throw: 'yes' as unknown as boolean })).toThrow(/`throw`/)
  })

  test('the middleware function is named', () => {
    expect(rateLimit().name).toBe('sluiceRateLimit')
  })
})
