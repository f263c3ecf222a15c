import express from 'express'
import request from 'supertest'
import { captureLogger, listen, runHttpScenarios, type AdapterHarness } from '@sluice/testkit'
import { rateLimit, type ExpressRateLimitOptions } from '@sluice/express'
import { resetProxyWarnings } from '@sluice/http'

// express@4 is installed under the alias `express4`; its API matches for what the harness uses.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const express4 = require('express4') as typeof express

function harness(name: string, factory: typeof express): AdapterHarness {
  return {
    name,
    resetStyle: 'epoch',
    async start(options, setup = {}) {
      const app = factory()
      if (setup.trustProxy) app.set('trust proxy', 'loopback')
      const middleware = rateLimit(options)
      app.use(middleware)
      app.get('/', (req, res) => {
        setup.onHandled?.()
        res.json({ ok: true, remaining: req.rateLimit?.remaining ?? null })
      })
      app.get('/bad', (_req, res) => {
        setup.onHandled?.()
        res.status(400).json({ ok: false })
      })
      const served = await listen(app)
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

runHttpScenarios(harness('Express 5', express))
runHttpScenarios(harness('Express 4', express4))

describe.each([
  ['Express 5', express],
  ['Express 4', express4],
])('%s: the middleware options', (_name, factory) => {
  function app(options: ExpressRateLimitOptions) {
    const server = factory()
    server.use(rateLimit({ logger: captureLogger(), ...options }))
    server.get('/', (req, res) => {
      res.json({ info: (req as unknown as Record<string, unknown>).quota ?? req.rateLimit ?? null })
    })
    return server
  }

  test('window, limit, key, handler, requestPropertyName', async () => {
    const server = app({
      window: 60_000,
      limit: 1,
      key: (req) => String(req.headers['x-user']),
      requestPropertyName: 'quota',
      handler: (_req, res, _next, decision) => {
        res.status(418).send(`wait ${Math.ceil(decision.retryAfterMs / 1000)}`)
      },
    })
    const ok = await request(server).get('/').set('x-user', 'a').expect(200)
    expect(ok.body.info).toMatchObject({ allowed: true, limit: 1, remaining: 0 })
    const limited = await request(server).get('/').set('x-user', 'a').expect(418)
    expect(limited.text).toMatch(/^wait \d+$/)
    expect(limited.headers['x-ratelimit-remaining']).toBe('0')
    await request(server).get('/').set('x-user', 'b').expect(200)
  })

  test('a 429 that throws while written (a message res.json cannot serialize) reaches the error handler', async () => {
    const unhandled: unknown[] = []
    const onUnhandled = (reason: unknown) => void unhandled.push(reason)
    process.on('unhandledRejection', onUnhandled)
    try {
      for (const later of [false, true]) {
        const server = factory()
        const base = { limit: 1, window: 60_000, message: () => ({ id: 1n }) }
        // An async key: the verdict comes in a promise, settled by the middleware's async path.
        const options: ExpressRateLimitOptions = later
          ? { ...base, key: async () => Promise.resolve('k') }
          : base
        server.use(rateLimit(options))
        server.get('/', (_req, res) => void res.json({ ok: true }))
        server.use(
          (
            error: Error,
            _req: express.Request,
            res: express.Response,
            _next: express.NextFunction,
          ) => void res.status(500).send(`handled: ${error.message}`),
        )
        await request(server).get('/').expect(200)
        const failed = await request(server).get('/').expect(500)
        expect(failed.text).toBe('handled: Do not know how to serialize a BigInt')
      }
      await new Promise((resolve) => setImmediate(resolve))
      expect(unhandled).toEqual([])
    } finally {
      process.off('unhandledRejection', onUnhandled)
    }
  })

  test("a 429's JSON is res.json's: the app's json spaces are kept; repeated bodies are the same bytes", async () => {
    const clock = () => 60_000 * 1000
    const plain = app({ limit: 1, window: 60_000, algorithm: 'fixed-window', clock })
    await request(plain).get('/').expect(200)
    const first = await request(plain).get('/').expect(429)
    const second = await request(plain).get('/').expect(429)
    expect(first.headers['content-type']).toBe('application/json; charset=utf-8')
    expect(first.text).toBe(
      '{"error":"Too Many Requests","message":"Too many requests, please try again in 60 seconds.","retryAfter":60}',
    )
    expect(second.text).toBe(first.text)
    const spaced = app({ limit: 1, window: 60_000, algorithm: 'fixed-window', clock })
    spaced.set('json spaces', 2)
    await request(spaced).get('/').expect(200)
    const pretty = await request(spaced).get('/').expect(429)
    expect(pretty.text).toBe(JSON.stringify(JSON.parse(first.text), null, 2))
  })

  test('limit as a function of the request and standardHeaders: true (draft-6)', async () => {
    const server = app({ limit: (req) => (req.res?.locals ? 2 : 1), standardHeaders: true })
    const res = await request(server).get('/').expect(200)
    expect(res.headers['ratelimit-limit']).toBe('2')
    expect(res.headers['ratelimit-policy']).toBe('2;w=60')
  })

  test("onStoreError: 'allow' passes the request on", async () => {
    const failing = {
      consume: () => Promise.reject(new Error('down')),
      peek: () => Promise.reject(new Error('down')),
      refund: () => Promise.reject(new Error('down')),
      reset: () => Promise.reject(new Error('down')),
      penalize: () => Promise.reject(new Error('down')),
      block: () => Promise.reject(new Error('down')),
    }
    await request(app({ store: failing, onStoreError: 'allow' }))
      .get('/')
      .expect(200)
  })

  test("express-rate-limit's names are a ConfigError naming Sluice's option and the compat entry", () => {
    const peerNames: Array<[string, unknown, string]> = [
      ['windowMs', 60_000, '`window`'],
      ['max', 5, '`limit`'],
      ['keyGenerator', () => 'k', '`key` (it gets `req`)'],
      ['passOnStoreError', true, "`onStoreError: 'allow'`"],
    ]
    for (const [name, value, instead] of peerNames) {
      const thrown = (() => {
        try {
          rateLimit({ [name]: value } as never)
        } catch (error) {
          return error as Error
        }
      })()
      expect(thrown?.name).toBe('ConfigError')
      expect(thrown?.message).toContain(`\`${name}\` is express-rate-limit's name`)
      expect(thrown?.message).toContain(`use ${instead}, or import from \`@sluice/express/compat\``)
    }
    expect(() => rateLimit({ windowMs: 60_000, window: 60_000 } as never)).toThrow(
      /`windowMs` is express-rate-limit's name \(got 60000\)/,
    )
    expect(() => rateLimit({ requestPropertyName: '' })).toThrow(/`requestPropertyName`/)
  })

  test('trust proxy = 1 (one hop, as docs/proxies.md says) gives each forwarded client its bucket', async () => {
    resetProxyWarnings()
    const logger = captureLogger()
    const server = factory()
    server.set('trust proxy', 1)
    server.use(rateLimit({ limit: 1, logger }))
    server.get('/', (_req, res) => void res.end('ok'))
    await request(server).get('/').set('X-Forwarded-For', '203.0.113.1').expect(200)
    await request(server).get('/').set('X-Forwarded-For', '203.0.113.2').expect(200)
    await request(server).get('/').set('X-Forwarded-For', '203.0.113.1').expect(429)
    expect(logger.warnings).toEqual([])
  })

  test('errors name the option as written', () => {
    expect(() => rateLimit({ limit: -1 })).toThrow(/`limit` must be a positive integer; got -1/)
    expect(() => rateLimit({ window: '1m' })).not.toThrow()
  })

  test('trust proxy = true gets a one-time warning', async () => {
    resetProxyWarnings()
    const logger = captureLogger()
    const server = factory()
    server.set('trust proxy', true)
    server.use(rateLimit({ logger }))
    server.get('/', (_req, res) => void res.end('ok'))
    await request(server).get('/').expect(200)
    await request(server).get('/').expect(200)
    expect(logger.warnings).toHaveLength(1)
    expect(logger.warnings[0]).toMatch(/trusts every proxy/)
  })

  test('the middleware function is named', () => {
    expect(rateLimit().name).toBe('sluiceRateLimit')
  })

  test("the decision set in a mounted sub-app is still on req in the parent's later handlers", async () => {
    const parent = factory()
    const sub = factory()
    sub.use(rateLimit({ limit: 5, logger: captureLogger() }))
    sub.get('/own', (req, res) => void res.json({ remaining: req.rateLimit?.remaining ?? null }))
    parent.use('/sub', sub)
    // No route of the sub-app matches /sub/after: Express restores the parent's prototype.
    parent.get('/sub/after', (req, res) => {
      res.json({ remaining: req.rateLimit?.remaining ?? null, own: Object.keys(req) })
    })
    expect((await request(parent).get('/sub/own').expect(200)).body.remaining).toBe(4)
    const after = await request(parent).get('/sub/after').expect(200)
    expect(after.body.remaining).toBe(3)
    // Read and written like a property, without adding one to each request.
    expect(after.body.own).not.toContain('rateLimit')
  })

  test('a requestPropertyName the request already has elsewhere on its chain is assigned plainly', async () => {
    const server = factory()
    // `pipe` is a stream method: an accessor for it would break every request of the process.
    server.use(rateLimit({ requestPropertyName: 'pipe', logger: captureLogger() }))
    server.get('/', (req, res) => {
      const own = Object.getOwnPropertyDescriptor(req, 'pipe')?.value as { remaining?: number }
      res.json({ remaining: own?.remaining ?? null, pipe: typeof factory.request.pipe })
    })
    const res = await request(server).get('/').expect(200)
    expect(res.body).toEqual({ remaining: 99, pipe: 'function' })
  })
})
