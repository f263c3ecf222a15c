// The proxy checks of both Express entries, through real Express apps: accurate (no warning on
// an empty X-Forwarded-For), once per kind (one never hides another), a trust function that
// trusts everything seen, and the compat entry reporting as express-rate-limit does.
import express, { type RequestHandler } from 'express'
import request from 'supertest'
import { captureLogger } from '@sluice/testkit'
import { rateLimit } from '@sluice/express'
import { rateLimit as compatRateLimit } from '@sluice/express/compat'
import { resetProxyWarnings } from '@sluice/http'

beforeEach(() => resetProxyWarnings())

function app(trust: unknown, middleware: RequestHandler) {
  const server = express()
  if (trust !== undefined) server.set('trust proxy', trust)
  server.use(middleware)
  server.get('/', (_req, res) => void res.end('ok'))
  return server
}

function compatLogger() {
  const errors: Array<{ code?: string; message: string }> = []
  return {
    errors,
    error: (error: { code?: string; message: string }) => errors.push(error),
    warn: jest.fn(),
  }
}

test('an empty X-Forwarded-For is no sign of a proxy: no warning, and a real one later is still given', async () => {
  const logger = captureLogger()
  const server = app(undefined, rateLimit({ limit: 5, logger }))
  await request(server).get('/').set('X-Forwarded-For', '').expect(200)
  await request(server).get('/').set('X-Forwarded-For', ' , ').expect(200)
  expect(logger.warnings).toEqual([])
  await request(server).get('/').set('X-Forwarded-For', '203.0.113.9').expect(200)
  expect(logger.warnings).toEqual([
    expect.stringMatching(/X-Forwarded-For but Express does not trust its sender/),
  ])
})

test('one warning per kind: trusting everything does not hide an untrusted proxy, nor that a trusted one is the wrong one', async () => {
  const logger = captureLogger()
  await request(app(true, rateLimit({ limit: 5, logger })))
    .get('/')
    .expect(200)
  await request(app(undefined, rateLimit({ limit: 5, logger })))
    .get('/')
    .set('X-Forwarded-For', '203.0.113.9')
    .expect(200)
  // A proxy is trusted, but not the one the request came through (127.0.0.1).
  const wrong = app('10.0.0.1', rateLimit({ limit: 5, logger }))
  await request(wrong).get('/').set('X-Forwarded-For', '203.0.113.9').expect(200)
  await request(wrong).get('/').set('X-Forwarded-For', '203.0.113.10').expect(200)
  expect(logger.warnings).toEqual([
    expect.stringMatching(/Express trusts every proxy/),
    expect.stringMatching(/X-Forwarded-For but Express does not trust its sender \(127\.0\.0\.1\)/),
    expect.stringMatching(
      /X-Forwarded-For, but Express's proxy setting does not trust its sender \(127\.0\.0\.1\)/,
    ),
  ])
})

test('a trust proxy function that trusts everything is seen; a hop count or an address is not', async () => {
  const logger = captureLogger()
  await request(app(() => true, rateLimit({ limit: 5, logger })))
    .get('/')
    .expect(200)
  expect(logger.warnings).toEqual([expect.stringMatching(/Express trusts every proxy/)])
  resetProxyWarnings()
  const quiet = captureLogger()
  for (const trust of [1, 'loopback', (address: string) => address === '127.0.0.1']) {
    await request(app(trust, rateLimit({ limit: 5, logger: quiet })))
      .get('/')
      .set('X-Forwarded-For', '203.0.113.9')
      .expect(200)
  }
  expect(quiet.warnings).toEqual([])
})

describe('@sluice/express/compat', () => {
  test('X-Forwarded-For without trust proxy is ERR_ERL_UNEXPECTED_X_FORWARDED_FOR, once', async () => {
    const logger = compatLogger()
    const server = app(undefined, compatRateLimit({ limit: 5, logger }))
    await request(server).get('/').set('X-Forwarded-For', '').expect(200)
    expect(logger.errors).toEqual([])
    await request(server).get('/').set('X-Forwarded-For', '203.0.113.9').expect(200)
    await request(server).get('/').set('X-Forwarded-For', '203.0.113.10').expect(200)
    expect(logger.errors).toHaveLength(1)
    expect(logger.errors[0]).toMatchObject({
      name: 'ValidationError',
      code: 'ERR_ERL_UNEXPECTED_X_FORWARDED_FOR',
    })
    expect(logger.errors[0].message).toMatch(/does not trust its sender \(127\.0\.0\.1\)/)
  })

  test('trust proxy true (or a function trusting all) is ERR_ERL_PERMISSIVE_TRUST_PROXY', async () => {
    const logger = compatLogger()
    await request(app(() => true, compatRateLimit({ limit: 5, logger })))
      .get('/')
      .expect(200)
    expect(logger.errors).toEqual([
      expect.objectContaining({ code: 'ERR_ERL_PERMISSIVE_TRUST_PROXY' }),
    ])
  })

  test('validate turns the checks off; a custom keyGenerator is not keyed by IP', async () => {
    const off = compatLogger()
    await request(
      app(undefined, compatRateLimit({ validate: { xForwardedForHeader: false }, logger: off })),
    )
      .get('/')
      .set('X-Forwarded-For', '203.0.113.9')
      .expect(200)
    expect(off.errors).toEqual([])
    resetProxyWarnings()
    const keyed = compatLogger()
    await request(app(undefined, compatRateLimit({ keyGenerator: () => 'user', logger: keyed })))
      .get('/')
      .set('X-Forwarded-For', '203.0.113.9')
      .expect(200)
    expect(keyed.errors).toEqual([])
  })
})
