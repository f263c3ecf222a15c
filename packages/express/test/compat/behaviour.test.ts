// express-rate-limit 8's behaviours the compatibility entry matches, one test each, through a
// real Express server.
import type { NextFunction, Request, Response } from 'express'
import { rateLimit, ipKeyGenerator, type Options, type RateLimitInfo } from '@sluice/express/compat'
import { ConfigError } from '@sluice/core'
import { fixedNow, serve } from './serve'

const TEXT_MESSAGE = 'Too many requests, please try again later.'

/** A logger as express-rate-limit takes it, keeping what it was given. */
function recordingLogger() {
  const errors: unknown[][] = []
  const warnings: unknown[][] = []
  return {
    errors,
    warnings,
    error: (...args: unknown[]) => void errors.push(args),
    warn: (...args: unknown[]) => void warnings.push(args),
  }
}

/** Saves the request the limiter saw, to read what it put on it. */
function saveRequest(into: { req?: Request }) {
  return (req: Request, _res: Response, next: NextFunction) => {
    into.req = req
    next()
  }
}

test('the default limit is 5 requests a minute, the sixth refused with the text message', async () => {
  const { get } = await serve(rateLimit())
  for (let i = 0; i < 5; i++) await get().expect(200, 'ok')
  const refused = await get().expect(429)
  expect(refused.text).toBe(TEXT_MESSAGE)
  expect(refused.headers['content-type']).toBe('text/html; charset=utf-8')
  expect(refused.headers['retry-after']).toBe('60')
})

test('a string message is sent as text, an object as JSON, a function of (req, res) as it returns', async () => {
  const text = await serve(rateLimit({ limit: 1, message: 'Enhance your calm' }))
  await text.get().expect(200)
  await text.get().expect(429, 'Enhance your calm')

  const json = await serve(rateLimit({ limit: 1, message: { error: 'slow down' } }))
  await json.get().expect(200)
  await json.get().expect(429, { error: 'slow down' })

  const computed = await serve(
    rateLimit({ limit: 1, message: async (req: Request) => `slow down, ${req.query.who}` }),
  )
  await computed.get('/?who=ann').expect(200)
  await computed.get('/?who=ann').expect(429, 'slow down, ann')
})

test('limit 0 refuses every request, the first one too', async () => {
  const { get } = await serve(rateLimit({ limit: 0 }))
  await get().expect(429, TEXT_MESSAGE)
  await get().expect(429, TEXT_MESSAGE)
})

test('a NaN or negative limit or windowMs falls back to the default, with a warning', async () => {
  const logger = recordingLogger()
  const { get } = await serve(rateLimit({ limit: Number.NaN, windowMs: -5, logger }))
  for (let i = 0; i < 5; i++) await get().expect(200)
  await get().expect(429).expect('retry-after', '60')
  expect(logger.warnings.map((args) => args[1])).toEqual([
    '[sluice] express-rate-limit compatibility: `windowMs` out of range',
    '[sluice] express-rate-limit compatibility: `limit` out of range',
  ])
})

test("each key's window starts at its first request, not on the clock", async () => {
  // Clock-aligned one-minute windows would end at 1_020_000; this key's ends at 1_060_500.
  const time = fixedNow(1_000_500)
  const { get } = await serve(rateLimit({ limit: 1, windowMs: 60_000 }))
  await get().expect(200).expect('x-ratelimit-reset', '1061')
  time.advance(29_500) // 1_030_000: past the clock's window edge, inside this key's window
  await get().expect(429).expect('retry-after', '31')
  time.advance(30_500) // 1_060_500: this key's window is over
  await get().expect(200).expect('x-ratelimit-reset', '1121')
})

test('max as a function gets (req, res), so limits can differ per client', async () => {
  const seen: string[] = []
  const { get } = await serve(
    rateLimit({
      max: (req: Request, res: Response) => {
        seen.push(typeof res.setHeader)
        return req.query.tier === 'gold' ? 3 : 1
      },
      keyGenerator: (req: Request) => String(req.query.tier),
    }),
  )
  await get('/?tier=basic').expect(200)
  await get('/?tier=basic').expect(429)
  for (let i = 0; i < 3; i++) await get('/?tier=gold').expect(200)
  await get('/?tier=gold').expect(429)
  expect(seen).toEqual(Array(6).fill('function'))
})

test('keyGenerator gets (req, res) and its key separates clients', async () => {
  const { get } = await serve(
    rateLimit({
      limit: 1,
      keyGenerator: (req: Request, res: Response) => `${req.query.user}:${res.statusCode}`,
    }),
  )
  await get('/?user=a').expect(200)
  await get('/?user=b').expect(200)
  await get('/?user=a').expect(429)
})

test('req.rateLimit carries limit, used, remaining, resetTime and key, and a hidden current', async () => {
  fixedNow(2_000_000)
  const saved: { req?: Request } = {}
  const { get } = await serve(saveRequest(saved), rateLimit({ limit: 6 }))
  await get().expect(200)
  await get().expect(200)
  const info = (saved.req as unknown as { rateLimit: RateLimitInfo }).rateLimit
  expect(info).toEqual({
    limit: 6,
    used: 2,
    remaining: 4,
    resetTime: new Date(2_060_000),
    key: '127.0.0.1',
  })
  expect((info as unknown as { current: number }).current).toBe(2)
  expect(Object.keys(info)).toEqual(['limit', 'used', 'remaining', 'resetTime', 'key'])
})

test('requestPropertyName puts the info under another name', async () => {
  const saved: { req?: Request } = {}
  const { get } = await serve(saveRequest(saved), rateLimit({ requestPropertyName: 'quota' }))
  await get().expect(200)
  const req = saved.req as unknown as Record<string, RateLimitInfo | undefined>
  expect(req.quota?.remaining).toBe(4)
  expect(req.quota?.used).toBe(1)
})

test('handler gets (req, res, next, options) with the resolved options', async () => {
  let given: Options | undefined
  const { get } = await serve(
    rateLimit({
      limit: 1,
      statusCode: 420,
      handler: (_req, res, _next, options) => {
        given = options
        res.status(options.statusCode).send(`limit ${String(options.limit)}`)
      },
    }),
  )
  await get().expect(200)
  await get().expect(420, 'limit 1')
  expect(given?.windowMs).toBe(60_000)
  expect(given?.message).toBe(TEXT_MESSAGE)
  expect(given?.requestPropertyName).toBe('rateLimit')
})

test('an error thrown by handler or skip goes to next(error)', async () => {
  const failing = (where: 'handler' | 'skip') =>
    rateLimit({
      limit: 1,
      [where]: () => {
        throw new Error(`${where} broke`)
      },
    })
  const onError = (error: Error, _req: Request, res: Response, _next: NextFunction) =>
    void res.status(500).send(error.message)
  const handler = await serve(failing('handler'))
  handler.app.use(onError)
  await handler.get().expect(200)
  await handler.get().expect(500, 'handler broke')
  const skip = await serve(failing('skip'))
  skip.app.use(onError)
  await skip.get().expect(500, 'skip broke')
})

test('skip passes requests uncounted and without headers', async () => {
  const { get } = await serve(
    rateLimit({ limit: 1, skip: (req: Request) => req.query.free === '1' }),
  )
  const free = await get('/?free=1').expect(200)
  expect(free.headers['x-ratelimit-limit']).toBeUndefined()
  await get('/?free=1').expect(200)
  await get().expect(200)
  await get().expect(429)
})

test('skipFailedRequests gives back the hit of a failed response', async () => {
  const { get } = await serve(rateLimit({ limit: 2, skipFailedRequests: true }))
  await get('/fail').expect(400)
  await get('/fail').expect(400)
  await get().expect(200).expect('x-ratelimit-remaining', '1')
})

test('IPv6 clients are grouped by /56: two addresses of one /56 share a bucket', async () => {
  const { get } = await serve(rateLimit({ limit: 1 }))
  await get().set('X-Forwarded-For', '2001:db8:1:100::1').expect(200)
  await get().set('X-Forwarded-For', '2001:db8:1:1ff::2').expect(429)
  await get().set('X-Forwarded-For', '2001:db8:1:200::1').expect(200)
})

test('ipKeyGenerator keys IPv4 as is, mapped IPv4 as IPv4, and IPv6 by its subnet', () => {
  expect(ipKeyGenerator('203.0.113.9')).toBe('203.0.113.9')
  expect(ipKeyGenerator('::ffff:203.0.113.9')).toBe('203.0.113.9')
  expect(ipKeyGenerator('::ffff:cb00:7109', false)).toBe('203.0.113.9')
  expect(ipKeyGenerator('::203.0.113.9')).toBe('203.0.113.9')
  expect(ipKeyGenerator('2001:db8:abcd:12ff::1')).toBe('2001:db8:abcd:1200::/56')
  expect(ipKeyGenerator('2001:db8:abcd:12ff::1', 48)).toBe('2001:db8:abcd::/48')
  expect(ipKeyGenerator('2001:db8:abcd:12ff::1', 128)).toBe('2001:db8:abcd:12ff::1/128')
  expect(ipKeyGenerator('2001:0db8::0001', false)).toBe('2001:0db8::0001')
  expect(ipKeyGenerator('::1')).toBe('::/56')
})

test('an ipv6Subnet outside 32-64 is logged with its code and /56 is used', () => {
  const logger = recordingLogger()
  rateLimit({ ipv6Subnet: 48.5, logger })
  expect(logger.errors).toHaveLength(1)
  expect(logger.errors[0][0]).toMatchObject({ code: 'ERR_ERL_IPV6_SUBNET' })
})

test('an unknown option is warned about, not refused', () => {
  const logger = recordingLogger()
  rateLimit({ logger, onLimitReached: () => {} } as Partial<Options>)
  expect(logger.warnings.map((args) => args[1])).toEqual([
    '[sluice] express-rate-limit compatibility: `onLimitReached` is not an express-rate-limit option and is ignored',
  ])
})

test('a logger without error and warn is a ConfigError naming `logger`', () => {
  expect(() => rateLimit({ logger: { error: 'no' } as unknown as Options['logger'] })).toThrow(
    ConfigError,
  )
  expect(() => rateLimit({ logger: { error: 'no' } as unknown as Options['logger'] })).toThrow(
    /`logger` must be an object with error\(error, message\) and warn\(\.\.\.\) methods; got/,
  )
})

test('the options object given is not changed', () => {
  const options = { limit: 3 }
  rateLimit(options)
  expect(options).toStrictEqual({ limit: 3 })
})

test('a limit function returning 0 is a ConfigError handed to next, never a silent pass', async () => {
  const seen: unknown[] = []
  const served = await serve(rateLimit({ limit: () => 0 }))
  served.app.use((error: Error, _req: Request, res: Response, _next: NextFunction) => {
    seen.push(error)
    res.status(500).send('limit broke')
  })
  await served.get().expect(500, 'limit broke')
  expect(seen).toHaveLength(1)
  expect(seen[0]).toBeInstanceOf(ConfigError)
  expect((seen[0] as Error).message).toBe('`limit` must be a positive integer; got 0')
})
