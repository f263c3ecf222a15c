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
])('%s: koa-ratelimit options', (_name, App) => {
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

  test('duration, max, id (false bypasses), custom header names, errorMessage, status', async () => {
    const server = app({
      duration: 60_000,
      max: 1,
      // A still clock: a minute boundary between the two requests would weigh the first below 1.
      clock: () => 1_700_000_030_000,
      id: (ctx) => (ctx.get('x-internal') ? false : ctx.ip),
      headers: {
        remaining: 'Rate-Limit-Remaining',
        reset: 'Rate-Limit-Reset',
        total: 'Rate-Limit-Total',
      },
      errorMessage: 'Sometimes You Just Have to Slow Down.',
      status: 420,
    })
    const ok = await request(server).get('/').expect(200)
    expect(ok.headers['rate-limit-total']).toBe('1')
    expect(ok.headers['rate-limit-remaining']).toBe('0')
    expect(ok.headers['x-ratelimit-limit']).toBeUndefined()
    const limited = await request(server).get('/').expect(420)
    expect(limited.body.message).toBe('Sometimes You Just Have to Slow Down.')
    for (let i = 0; i < 3; i++) await request(server).get('/').set('x-internal', '1').expect(200)
  })

  test('the 429 body is JSON text; an upstream middleware reads the decision from ctx.state', async () => {
    const server = app(
      { duration: 60_000, max: 1, algorithm: 'fixed-window', clock: () => 60_000 * 1000 },
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
      duration: 60_000,
      max: 1,
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

  test('whitelist/blacklist functions and disableHeader', async () => {
    const server = app({
      max: 1,
      disableHeader: true,
      whitelist: (ctx) => ctx.get('x-vip') === '1',
      blacklist: (ctx) => ctx.get('x-bad') === '1',
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
    const server = app({ max: 1, throw: true }, async (ctx, next) => {
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
      max: 1,
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

  test('aliases conflict with their canonical name', () => {
    expect(() => rateLimit({ max: 1, limit: 1 })).toThrow(/`max` must be unset when `limit`/)
    expect(() => rateLimit({ whitelist: [], allowlist: [] })).toThrow(/`whitelist`/)
    expect(() => rateLimit({ throw: 'yes' as unknown as boolean })).toThrow(/`throw`/)
  })

  test('errors name the koa-ratelimit option as written', () => {
    expect(() => rateLimit({ duration: '60000' as unknown as number })).toThrow(
      /`duration` must be a positive number of ms; got "60000"/,
    )
    expect(() => rateLimit({ max: 0 })).toThrow(/`max` must be a positive integer; got 0/)
  })

  test('the middleware function is named', () => {
    expect(rateLimit().name).toBe('sluiceRateLimit')
  })
})
