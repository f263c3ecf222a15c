/**
 * Owns the HTTP suite every adapter passes: the same scenarios over Express, Fastify and Koa.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, get as httpGet, type RequestListener, type Server } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { AddressInfo } from 'node:net'
import { Redis } from 'ioredis'
import request from 'supertest'
import {
  ConfigError,
  headerKey,
  resetProxyWarnings,
  type DecisionEvent,
  type DescriptorEntry,
  type HttpLimitOptions,
  type HttpRequestLike,
  type Store,
} from '@sluice/core'
import { RedisStore } from '@sluice/redis'
import { startRedis, type RedisServer } from './servers'
import { watchStalls } from './stalls'

/** Options as the shared scenarios write them: functions see only `ip` and `headers`, which every framework's request has. */
export type ScenarioOptions = HttpLimitOptions<HttpRequestLike>

export interface ScenarioSetup {
  /** Trust one proxy hop (loopback), so X-Forwarded-For decides the client IP. */
  trustProxy?: boolean
  /** Called each time the route handler runs. */
  onHandled?: () => void
}

export interface ScenarioApp {
  /** A listening server. */
  server: Server
  /** Closes the server and the rate limiter with it (`middleware.close()`, Fastify's onClose). */
  close(): Promise<void>
}

/**
 * What each adapter's test provides: an app with the limiter in front of
 * `GET /` (200 `{ ok: true, remaining }`, `remaining` read from the decision on the request) and
 * `GET /bad` (400), listening on 127.0.0.1. `start` rejects with the ConfigError of a bad option.
 */
export interface AdapterHarness {
  name: string
  /** How the adapter writes X-RateLimit-Reset: Unix epoch seconds or seconds from now. */
  resetStyle: 'epoch' | 'delta'
  start(options: ScenarioOptions, setup?: ScenarioSetup): Promise<ScenarioApp>
}

/** Serves a Node request listener (an Express app, `koa.callback()`) on 127.0.0.1 and a free port. */
export async function listen(listener: RequestListener): Promise<ScenarioApp> {
  const server = createServer(listener)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    server,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections()
        server.close((error) => (error ? reject(error) : resolve()))
      }),
  }
}

/** A clock the scenarios move by hand. */
export function fakeClock(start: number) {
  const clock = { now: start, read: () => clock.now }
  return clock
}

/** A logger that keeps warnings for assertions. */
export function captureLogger() {
  const warnings: string[] = []
  return { warnings, warn: (message: string) => void warnings.push(message) }
}

/** A real Store whose every call fails, as a dead Redis would. */
export class FailingStore implements Store {
  private fail(): Promise<never> {
    return Promise.reject(new Error('store is down'))
  }
  consume() {
    return this.fail()
  }
  peek() {
    return this.fail()
  }
  refund() {
    return this.fail()
  }
  reset() {
    return this.fail()
  }
  penalize() {
    return this.fail()
  }
  block() {
    return this.fail()
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * A `key` function (by client IP) that tells when the server has keyed its `nth` request: the
 * limiter decides in the same turn, so from then on that request is counted.
 */
function noticeKeying(nth: number) {
  let seen = 0
  let onKeyed!: () => void
  const keyed = new Promise<void>((resolve) => (onKeyed = resolve))
  const key = (req: HttpRequestLike) => {
    if (++seen === nth) onKeyed()
    return req.ip ?? 'no-ip'
  }
  return { key, keyed }
}

/**
 * Sends GET / and disconnects once `counted` settles, before the answer comes (a client that
 * left). Waiting for the server, not a fixed time, makes sure the request was counted: a loaded
 * machine could otherwise drop the connection before the request arrived, and a test of the
 * refund would pass without one.
 */
async function abandonRequest(port: number, counted: Promise<void>): Promise<void> {
  const abandoned = httpGet({ host: '127.0.0.1', port, path: '/' })
  abandoned.on('error', () => {})
  let timer: NodeJS.Timeout | undefined
  const noShow = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error('the server never keyed the request')), 5000)
  })
  try {
    await Promise.race([counted, noShow])
  } finally {
    clearTimeout(timer)
    abandoned.destroy()
  }
}

/** Lets refunds scheduled on response 'close' run before the next request. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 5))

/** A minute-aligned time, so fixed windows reset a whole minute later. */
const T0 = 60_000 * 30_000

/**
 * The HTTP behaviour every adapter shares (DESIGN.md, "HTTP behaviour"): the same cases against
 * Express, Fastify and Koa through supertest.
 */
export function runHttpScenarios(harness: AdapterHarness): void {
  const open: ScenarioApp[] = []

  async function start(options: ScenarioOptions, setup?: ScenarioSetup) {
    // A clock that stands still 40 s into a minute unless the case brings its own: two requests
    // on the real clock could straddle a window edge, where counters legitimately reset (and
    // sliding-window's rounding admits one more), and the case would fail by chance.
    const app = await harness.start(
      { logger: captureLogger(), clock: fakeClock(T0 + 40_000).read, ...options },
      setup,
    )
    open.push(app)
    return request(app.server)
  }

  afterEach(async () => {
    await Promise.all(open.splice(0).map((app) => app.close()))
  })

  /** The reset X-RateLimit-Reset announces `seconds` from `now`, in this adapter's style. */
  function legacyReset(now: number, seconds: number): string {
    return String(harness.resetStyle === 'epoch' ? Math.ceil(now / 1000) + seconds : seconds)
  }

  /** An app with a fixed window of `limit` per minute, on a fake clock 20 s before its end. */
  async function startFixedMinute(limit: number, options: ScenarioOptions = {}) {
    const clock = fakeClock(T0 + 40_000)
    const agent = await start({
      limit,
      window: '1m',
      algorithm: 'fixed-window',
      clock: clock.read,
      ...options,
    })
    return { agent, clock }
  }

  /**
   * On such an app, each request up to the limit passes with its remaining count and the reset
   * 20 s away; the next one is 429 with remaining 0 and Retry-After 20, returned for more checks.
   */
  async function passUpToTheLimit(
    agent: Awaited<ReturnType<typeof start>>,
    clock: ReturnType<typeof fakeClock>,
    limit: number,
  ) {
    for (let remaining = limit - 1; remaining >= 0; remaining--) {
      const res = await agent.get('/').expect(200)
      expect(res.body).toEqual({ ok: true, remaining })
      expect(res.headers['x-ratelimit-limit']).toBe(String(limit))
      expect(res.headers['x-ratelimit-remaining']).toBe(String(remaining))
      expect(res.headers['x-ratelimit-reset']).toBe(legacyReset(clock.now, 20))
    }
    const limited = await agent.get('/').expect(429)
    expect(limited.headers['x-ratelimit-remaining']).toBe('0')
    expect(limited.headers['retry-after']).toBe('20')
    return limited
  }

  describe(`${harness.name}: shared HTTP behaviour`, () => {
    test('boundary: the limit passes, limit + 1 is 429 with remaining 0 and the JSON body', async () => {
      const { agent, clock } = await startFixedMinute(3)
      const limited = await passUpToTheLimit(agent, clock, 3)
      expect(limited.headers['x-ratelimit-retry-after']).toBe('20')
      expect(limited.body).toMatchObject({
        error: 'Too Many Requests',
        message: 'Too many requests, please try again in 20 seconds.',
        retryAfter: 20,
      })
    })

    test('the window resets on the (fake) clock', async () => {
      const clock = fakeClock(T0)
      const agent = await start({
        limit: 1,
        window: '1m',
        algorithm: 'fixed-window',
        clock: clock.read,
      })
      await agent.get('/').expect(200)
      await agent.get('/').expect(429)
      clock.now += 59_999
      await agent.get('/').expect(429)
      clock.now += 1
      await agent.get('/').expect(200)
    })

    test('limit as an async function: one limit per tier', async () => {
      const agent = await start({
        limit: async (req) => (req.headers['x-tier'] === 'gold' ? 3 : 1),
        window: '1m',
      })
      await agent.get('/').expect(200)
      await agent.get('/').expect(429)
      for (let i = 0; i < 3; i++) {
        const res = await agent.get('/').set('x-tier', 'gold').expect(200)
        expect(res.headers['x-ratelimit-limit']).toBe('3')
      }
      await agent.get('/').set('x-tier', 'gold').expect(429)
    })

    test('cost as a function of the request', async () => {
      const agent = await start({
        limit: 5,
        window: '1m',
        cost: (req) => Number(req.headers['x-cost'] ?? 1),
      })
      await agent.get('/').set('x-cost', '4').expect(200)
      const res = await agent.get('/').set('x-cost', '2').expect(429)
      expect(res.headers['x-ratelimit-remaining']).toBe('1')
      await agent.get('/').expect(200)
    })

    test('a request whose cost is over the limit is told it can never pass, with no Retry-After', async () => {
      const agent = await start({ limit: 10, window: '1m', cost: () => 15 })
      const res = await agent.get('/').expect(429)
      expect(res.headers['retry-after']).toBeUndefined()
      expect(res.headers['x-ratelimit-retry-after']).toBeUndefined()
      expect(res.body).toMatchObject({
        error: 'Too Many Requests',
        message:
          'This request costs more than the limit of 10 allows at once, so it can never pass; retrying will not help.',
        retryAfter: null,
      })
    })

    test('key by API token; requests without one fall back to the IP', async () => {
      const agent = await start({ limit: 1, window: '1m', key: headerKey('x-api-key') })
      await agent.get('/').set('x-api-key', 'alpha').expect(200)
      await agent.get('/').set('x-api-key', 'alpha').expect(429)
      await agent.get('/').set('x-api-key', 'beta').expect(200)
      await agent.get('/').expect(200)
      await agent.get('/').expect(429)
    })

    test('a key header sent twice keys by its first value: no new bucket per variant', async () => {
      const agent = await start({ limit: 1, window: '1m', key: headerKey('x-api-key') })
      await agent.get('/').set('x-api-key', 'alpha').expect(200)
      // An array is sent as one header line per value (superagent's types allow it for Cookie
      // only); Node joins them as "alpha, junk-1".
      const lines = (...values: string[]) => values as unknown as string
      await agent.get('/').set('x-api-key', lines('alpha', 'junk-1')).expect(429)
      await agent.get('/').set('x-api-key', lines('alpha', 'junk-2')).expect(429)
      await agent.get('/').set('x-api-key', lines('beta', 'alpha')).expect(200)
      await agent.get('/').set('x-api-key', 'beta').expect(429)
    })

    test('IPv6 clients are grouped by /64 (trusted proxy)', async () => {
      const logger = captureLogger()
      const agent = await start({ limit: 1, window: '1m', logger }, { trustProxy: true })
      await agent.get('/').set('X-Forwarded-For', '2001:db8:1:2::1').expect(200)
      await agent.get('/').set('X-Forwarded-For', '2001:db8:1:2:ffff:ffff:ffff:ffff').expect(429)
      await agent.get('/').set('X-Forwarded-For', '2001:db8:1:3::1').expect(200)
      expect(logger.warnings).toEqual([])
    })

    test('ipv6Subnet is configurable (false keys each address)', async () => {
      const agent = await start({ limit: 1, window: '1m', ipv6Subnet: false }, { trustProxy: true })
      await agent.get('/').set('X-Forwarded-For', '2001:db8::1').expect(200)
      await agent.get('/').set('X-Forwarded-For', '2001:db8::2').expect(200)
      await agent.get('/').set('X-Forwarded-For', '2001:db8:0:0:0:0:0:1').expect(429)
    })

    test('a forwarded address with a port keys by the address, whatever the port', async () => {
      const agent = await start({ limit: 1, window: '1m' }, { trustProxy: true })
      await agent.get('/').set('X-Forwarded-For', '203.0.113.1:1111').expect(200)
      await agent.get('/').set('X-Forwarded-For', '203.0.113.1:2222').expect(429)
      await agent.get('/').set('X-Forwarded-For', '[2001:db8::1]:2222').expect(200)
      await agent.get('/').set('X-Forwarded-For', '[2001:db8::2]:3333').expect(429)
    })

    test('an allowList CIDR whose prefix does not fit the address is a ConfigError', async () => {
      await expect(start({ limit: 1, window: '1m', allowList: ['10.0.0.0/33'] })).rejects.toThrow(
        /`allowList\[\]` must be a CIDR range whose prefix length fits the address.*got "10.0.0.0\/33"/,
      )
      await expect(start({ limit: 1, window: '1m', denyList: ['2001:db8::/129'] })).rejects.toThrow(
        ConfigError,
      )
    })

    test('IPv4-mapped IPv6 in any notation is the IPv4 client', async () => {
      const agent = await start({ limit: 1, window: '1m' }, { trustProxy: true })
      await agent.get('/').set('X-Forwarded-For', '10.0.0.1').expect(200)
      await agent.get('/').set('X-Forwarded-For', '::ffff:10.0.0.1').expect(429)
      await agent.get('/').set('X-Forwarded-For', '::ffff:a00:1').expect(429)
      await agent.get('/').set('X-Forwarded-For', '0:0:0:0:0:ffff:0a00:0001').expect(429)
      await agent.get('/').set('X-Forwarded-For', '10.0.0.2').expect(200)
    })

    test('a key function returning null, empty, NaN or an object limits by client IP, warned once', async () => {
      const logger = captureLogger()
      const bad: Record<string, unknown> = { null: null, empty: '', nan: NaN, object: {} }
      const agent = await start(
        {
          limit: 1,
          window: '1m',
          logger,
          key: (req) => bad[String(req.headers['x-kind'])] as string,
        },
        { trustProxy: true },
      )
      for (const [i, kind] of Object.keys(bad).entries()) {
        // Two clients with the same bad key: each gets a bucket of its own, none is shared.
        const first = `10.1.${i}.1`
        const second = `10.1.${i}.2`
        await agent.get('/?q=1').set('x-kind', kind).set('X-Forwarded-For', first).expect(200)
        await agent.get('/?q=1').set('x-kind', kind).set('X-Forwarded-For', second).expect(200)
        await agent.get('/?q=1').set('x-kind', kind).set('X-Forwarded-For', first).expect(429)
      }
      const badKeyWarnings = logger.warnings.filter((w) => w.includes('`key` returned'))
      expect(badKeyWarnings).toEqual([
        expect.stringMatching(/^\[sluice\] `key` returned null for GET \/: not a key/),
      ])
    })

    test('numeric and bigint keys are keys; onBadKey: throw answers 500', async () => {
      const agent = await start({
        limit: 1,
        window: '1m',
        key: (req) =>
          (req.headers['x-user'] === 'big'
            ? 10n ** 20n
            : Number(req.headers['x-user'])) as unknown as string,
      })
      await agent.get('/').set('x-user', '7').expect(200)
      await agent.get('/').set('x-user', '7').expect(429)
      await agent.get('/').set('x-user', '8').expect(200)
      await agent.get('/').set('x-user', 'big').expect(200)
      await agent.get('/').set('x-user', 'big').expect(429)
      const strict = await start({
        limit: 5,
        window: '1m',
        onBadKey: 'throw',
        key: () => null as unknown as string,
      })
      await strict.get('/').expect(500)
    })

    test('X-Forwarded-For is ignored without trust, with one warning per process', async () => {
      resetProxyWarnings()
      const logger = captureLogger()
      const agent = await start({ limit: 1, window: '1m', logger })
      await agent.get('/').set('X-Forwarded-For', '1.1.1.1').expect(200)
      await agent.get('/').set('X-Forwarded-For', '2.2.2.2').expect(429)
      await agent.get('/').set('X-Forwarded-For', '3.3.3.3').expect(429)
      expect(logger.warnings).toHaveLength(1)
      expect(logger.warnings[0]).toMatch(
        /X-Forwarded-For but .* does not trust its sender \(127\.0\.0\.1\)/,
      )
      // A second limiter in the same process does not repeat it.
      const again = captureLogger()
      const other = await start({ limit: 1, window: '1m', logger: again })
      await other.get('/').set('X-Forwarded-For', '4.4.4.4').expect(200)
      expect(again.warnings).toEqual([])
    })

    describe('IETF header drafts, exactly', () => {
      const cases: Array<[ScenarioOptions['standardHeaders'], Record<string, string>]> = [
        [
          'draft-6',
          {
            'ratelimit-policy': '5;w=60',
            'ratelimit-limit': '5',
            'ratelimit-remaining': '4',
            'ratelimit-reset': '60',
          },
        ],
        ['draft-7', { 'ratelimit-policy': '5;w=60', ratelimit: 'limit=5, remaining=4, reset=60' }],
        [
          'draft-8',
          { 'ratelimit-policy': '"5-per-1m";q=5;w=60', ratelimit: '"5-per-1m";r=4;t=60' },
        ],
        [
          'draft-10',
          { 'ratelimit-policy': '"5-per-1m";q=5;w=60', ratelimit: '"5-per-1m";r=4;t=60' },
        ],
      ]
      test.each(cases)('%s', async (standardHeaders, expected) => {
        const agent = await start({
          limit: 5,
          window: '1m',
          algorithm: 'fixed-window',
          clock: fakeClock(T0).read,
          standardHeaders,
        })
        const res = await agent.get('/').expect(200)
        for (const [name, value] of Object.entries(expected)) expect(res.headers[name]).toBe(value)
        const others = ['ratelimit', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset']
        for (const name of others.filter((n) => !(n in expected)))
          expect(res.headers[name]).toBeUndefined()
      })

      test('legacyHeaders: false drops X-RateLimit-*, standard fields stay', async () => {
        const agent = await start({
          limit: 1,
          window: '1m',
          legacyHeaders: false,
          standardHeaders: 'draft-7',
        })
        const ok = await agent.get('/').expect(200)
        expect(ok.headers['x-ratelimit-limit']).toBeUndefined()
        expect(ok.headers['ratelimit']).toMatch(/^limit=1, remaining=0, reset=\d+$/)
        const limited = await agent.get('/').expect(429)
        expect(limited.headers['x-ratelimit-retry-after']).toBeUndefined()
        expect(limited.headers['retry-after']).toMatch(/^\d+$/)
      })
    })

    test('Retry-After is whole seconds rounded up, never before the announced reset', async () => {
      // sliding-log, limit 1 per 1.5 s, 0.7 s into a second: the wait is exactly 1500 ms.
      const clock = fakeClock(T0 + 700)
      const agent = await start({
        limit: 1,
        window: 1500,
        algorithm: 'sliding-log',
        clock: clock.read,
        standardHeaders: 'draft-7',
      })
      await agent.get('/').expect(200)
      const res = await agent.get('/').expect(429)
      const retryAfter = Number(res.headers['retry-after'])
      expect(res.headers['ratelimit']).toBe('limit=1, remaining=0, reset=2')
      if (harness.resetStyle === 'epoch') {
        // The reset is at epoch second 1_800_003 (rounded up); from 0.7 s past, that is 3 s away.
        expect(res.headers['x-ratelimit-reset']).toBe(String(Math.ceil((clock.now + 1500) / 1000)))
        expect(retryAfter).toBe(3)
        expect(clock.now + retryAfter * 1000).toBeGreaterThanOrEqual(
          Number(res.headers['x-ratelimit-reset']) * 1000,
        )
      } else {
        expect(res.headers['x-ratelimit-reset']).toBe('2')
        expect(retryAfter).toBe(2)
      }
      expect(res.headers['x-ratelimit-retry-after']).toBe(String(retryAfter))
      expect(res.body.retryAfter).toBe(retryAfter)
    })

    test('custom message (string, async function) and status', async () => {
      const agent = await start({ limit: 1, window: '1m', message: 'Slow down', statusCode: 503 })
      await agent.get('/').expect(200)
      const res = await agent.get('/').expect(503)
      expect(res.body).toMatchObject({ error: 'Service Unavailable', message: 'Slow down' })

      const other = await start({
        limit: 1,
        window: '1m',
        message: async (_req, decision) => ({ reason: 'quota', limit: decision.limit }),
      })
      await other.get('/').expect(200)
      const custom = await other.get('/').expect(429)
      expect(custom.body).toMatchObject({ reason: 'quota', limit: 1 })
    })

    test('onLimited sees every rejection; ban turns later ones into 403', async () => {
      const limited: number[] = []
      const agent = await start({
        limit: 1,
        window: '1m',
        ban: 1,
        onLimited: (_req, decision) => void limited.push(decision.limit),
      })
      await agent.get('/').expect(200)
      await agent.get('/').expect(429)
      const banned = await agent.get('/').expect(403)
      expect(banned.body).toMatchObject({ error: 'Forbidden' })
      expect(limited).toEqual([1, 1])
    })

    test('skip (async) requests are not counted and get no headers', async () => {
      const agent = await start({
        limit: 1,
        window: '1m',
        skip: async (req) => req.headers['x-skip'] === '1',
      })
      for (let i = 0; i < 3; i++) {
        const res = await agent.get('/').set('x-skip', '1').expect(200)
        expect(res.headers['x-ratelimit-limit']).toBeUndefined()
        expect(res.body.remaining).toBeNull()
      }
      await agent.get('/').expect(200)
      await agent.get('/').expect(429)
    })

    test('allowList passes, denyList gets 403', async () => {
      const allowed = await start({ limit: 1, window: '1m', allowList: ['127.0.0.1'] })
      for (let i = 0; i < 3; i++) await allowed.get('/').expect(200)
      const denied = await start({ limit: 1, window: '1m', denyList: ['127.0.0.0/8'] })
      const res = await denied.get('/').expect(403)
      expect(res.body).toMatchObject({ error: 'Forbidden' })
      const byKey = await start({
        limit: 5,
        window: '1m',
        key: headerKey('x-api-key'),
        denyList: ['x-api-key:evil'],
      })
      await byKey.get('/').set('x-api-key', 'evil').expect(403)
      await byKey.get('/').set('x-api-key', 'good').expect(200)
    })

    test('skipSuccessfulRequests refunds 2xx; failures count', async () => {
      const agent = await start({ limit: 2, window: '1m', skipSuccessfulRequests: true })
      for (let i = 0; i < 4; i++) {
        await agent.get('/').expect(200)
        await settle()
      }
      await agent.get('/bad').expect(400)
      await settle()
      await agent.get('/bad').expect(400)
      await settle()
      await agent.get('/').expect(429)
    })

    test('skipFailedRequests refunds failures; requestWasSuccessful decides', async () => {
      const agent = await start({ limit: 2, window: '1m', skipFailedRequests: true })
      for (let i = 0; i < 4; i++) {
        await agent.get('/bad').expect(400)
        await settle()
      }
      await agent.get('/').expect(200)
      await agent.get('/').expect(200)
      await settle()
      await agent.get('/').expect(429)

      const custom = await start({
        limit: 1,
        window: '1m',
        skipFailedRequests: true,
        requestWasSuccessful: (_req, res) => res.statusCode !== 400,
      })
      await custom.get('/bad').expect(400)
      await settle()
      await custom.get('/').expect(200)
      await settle()
      await custom.get('/').expect(429)
    })

    test('skipFailedRequests refunds a request whose client went away before the answer', async () => {
      const clock = fakeClock(T0)
      const { key, keyed } = noticeKeying(2)
      // leaky-bucket holds the second request 100 ms for shaping: time for the client to leave.
      const agent = await start({
        algorithm: 'leaky-bucket',
        limit: 10,
        window: '1s',
        burst: 2,
        skipFailedRequests: true,
        clock: clock.read,
        key,
      })
      const { port } = open[open.length - 1].server.address() as AddressInfo
      await agent.get('/').expect(200)
      await abandonRequest(port, keyed)
      // Without the refund the queue (burst 2) stays full on the unmoved clock, and a rejected
      // try counts nothing: only the refund lets a request through. It follows the server's
      // 'close' of the abandoned request, which a loaded machine may deliver late, so the third
      // request is retried for up to 3 s rather than sent once after a fixed pause.
      let third = await agent.get('/')
      for (const giveUp = Date.now() + 3000; third.status === 429 && Date.now() < giveUp;) {
        await sleep(50)
        third = await agent.get('/')
      }
      expect(third.status).toBe(200)
      expect(third.body).toEqual({ ok: true, remaining: 0 })
    })

    test('a failing store goes to error handling as 500 by default', async () => {
      let handled = 0
      const agent = await start(
        { limit: 1, window: '1m', store: new FailingStore(), timeoutMs: 50 },
        {
          onHandled: () => void handled++,
        },
      )
      await agent.get('/').expect(500)
      expect(handled).toBe(0)
    })

    test("onStoreError: 'allow' passes the request on exactly once", async () => {
      let handled = 0
      const agent = await start(
        { limit: 1, window: '1m', store: new FailingStore(), onStoreError: 'allow' },
        { onHandled: () => void handled++ },
      )
      await agent.get('/').expect(200)
      await agent.get('/').expect(200)
      expect(handled).toBe(2)
    })

    test("onStoreError: 'deny' answers 429 with Retry-After: 1 and the configured limit", async () => {
      // A clock off the second boundary: an epoch reset rounded up must not make it 2.
      const clock = fakeClock(T0 + 567)
      const agent = await start({
        limit: 7,
        window: '1m',
        store: new FailingStore(),
        onStoreError: 'deny',
        clock: clock.read,
        logger: captureLogger(),
      })
      const res = await agent.get('/').expect(429)
      expect(res.headers['retry-after']).toBe('1')
      expect(res.headers['x-ratelimit-limit']).toBe('7')
      expect(res.headers['x-ratelimit-remaining']).toBe('0')
    })

    test('several limits on one route: one list, the tightest decides', async () => {
      const clock = fakeClock(T0)
      const agent = await start({
        algorithm: 'fixed-window',
        limits: [
          { limit: 2, window: '1s', name: 'burst' },
          { limit: 3, window: '1m', name: 'sustained' },
        ],
        clock: clock.read,
        standardHeaders: 'draft-8',
      })
      const first = await agent.get('/').expect(200)
      expect(first.headers['ratelimit-policy']).toBe('"burst";q=2;w=1, "sustained";q=3;w=60')
      expect(first.headers['ratelimit']).toBe('"burst";r=1;t=1, "sustained";r=2;t=60')
      await agent.get('/').expect(200)
      const burst = await agent.get('/').expect(429)
      expect(burst.headers['retry-after']).toBe('1')
      expect(burst.headers['ratelimit']).toBe('"burst";r=0;t=1, "sustained";r=1;t=60')
      clock.now += 1000
      await agent.get('/').expect(200)
      clock.now += 1000
      const sustained = await agent.get('/').expect(429)
      expect(sustained.headers['retry-after']).toBe('58')
      expect(sustained.headers['x-ratelimit-limit']).toBe('3')
    })

    test('leaky-bucket: an admitted request is held for its delay', async () => {
      const agent = await start({
        algorithm: 'leaky-bucket',
        limit: 10,
        window: 1000,
        burst: 3,
        clock: fakeClock(T0).read,
      })
      let started = performance.now()
      await agent.get('/').expect(200)
      const first = performance.now() - started
      started = performance.now()
      await agent.get('/').expect(200)
      const second = performance.now() - started
      expect(second).toBeGreaterThanOrEqual(99)
      expect(second).toBeGreaterThan(first)
    })

    test('a client that leaves while held for shaping is released at once: its charge back, the route never run', async () => {
      let handled = 0
      const { key, keyed } = noticeKeying(2)
      // limit 2 a second, burst 3, on a still clock: delays 0, 500 and 1000 ms, nothing leaks.
      const agent = await start(
        {
          algorithm: 'leaky-bucket',
          limit: 2,
          window: 1000,
          burst: 3,
          clock: fakeClock(T0).read,
          key,
        },
        { onHandled: () => void handled++ },
      )
      const { port } = open[open.length - 1].server.address() as AddressInfo
      await agent.get('/').expect(200)
      await abandonRequest(port, keyed) // would be held 500 ms; leaves at once
      await sleep(700) // past the hold it would have had
      expect(handled).toBe(1)
      // Its place in the bucket was given back: two more fit (500 and 1000 ms), a third does not.
      const [a, b, c] = await Promise.all([agent.get('/'), agent.get('/'), agent.get('/')])
      expect([a.status, b.status, c.status].sort()).toEqual([200, 200, 429])
      expect(handled).toBe(3)
    })

    test('a hold longer than maxDelayMs, or beyond maxHolds, is 429 with Retry-After and takes nothing', async () => {
      let handled = 0
      const options = { algorithm: 'leaky-bucket', limit: 2, window: 1000, burst: 3 } as const
      const agent = await start(
        { ...options, clock: fakeClock(T0).read, maxDelayMs: 400 },
        { onHandled: () => void handled++ },
      )
      await agent.get('/').expect(200)
      const refused = await agent.get('/').expect(429) // would wait 500 ms
      expect(refused.headers['retry-after']).toBe('1')
      // The refused request took nothing: the next one is refused for the same 500 ms wait.
      await agent.get('/').expect(429)
      expect(handled).toBe(1)
      const none = await start({ ...options, clock: fakeClock(T0).read, maxHolds: 0 })
      await none.get('/').expect(200)
      await none.get('/').expect(429)
      await expect(harness.start({ ...options, maxHolds: -1 })).rejects.toThrow(
        /`maxHolds` must be a whole number of requests/,
      )
    })

    test('a bad option fails at start-up with a ConfigError naming it', async () => {
      await expect(harness.start({ limit: 0, window: '1m' })).rejects.toThrow(ConfigError)
      await expect(harness.start({ limit: 0, window: '1m' })).rejects.toThrow(
        /`limit` must be a positive integer; got 0/,
      )
      await expect(harness.start({ window: 'soon' })).rejects.toThrow(/`window`.*"soon"/)
      await expect(harness.start({ standardHeaders: 'draft-9' as 'draft-8' })).rejects.toThrow(
        /`standardHeaders`/,
      )
      await expect(harness.start({ limitt: 5 } as ScenarioOptions)).rejects.toThrow(
        /unknown option `limitt`/,
      )
    })

    describe('rules and descriptors', () => {
      /** The request path, as every framework's request carries it. */
      const path = (req: HttpRequestLike) => (req.url ?? '/').split('?')[0]
      const descriptors = (req: HttpRequestLike): DescriptorEntry[] => [
        ['route', path(req)],
        ['user', req.headers['x-user'] as string | undefined],
      ]
      const minute = (n: number) => ({ unit: 'minute' as const, requests_per_unit: n })

      test('per-route and per-user rules in one request, all-or-nothing; most specific wins', async () => {
        const agent = await start({
          clock: fakeClock(T0).read,
          descriptors,
          rules: {
            domain: 'api',
            descriptors: [
              { key: 'route', value: '/', rate_limit: minute(3) },
              { key: 'user', rate_limit: { ...minute(2), algorithm: 'fixed-window' } },
              { key: 'user', value: 'vip', rate_limit: minute(5) },
            ],
          },
          standardHeaders: 'draft-8',
        })
        const first = await agent.get('/').set('x-user', 'alice').expect(200)
        // Both rules decided this request; the binding one (fewest left) is the per-user one.
        expect(first.headers['x-ratelimit-limit']).toBe('2')
        expect(first.headers['x-ratelimit-remaining']).toBe('1')
        expect(first.headers['ratelimit-policy']).toBe(
          '"api.route_/";q=3;w=60, "api.user";q=2;w=60',
        )
        await agent.get('/').set('x-user', 'alice').expect(200)
        const limited = await agent.get('/').set('x-user', 'alice').expect(429)
        expect(limited.headers['x-ratelimit-limit']).toBe('2')
        expect(limited.headers['retry-after']).toBe('60')
        // alice's rejected request took nothing from the route: bob gets its third slot.
        await agent.get('/').set('x-user', 'bob').expect(200)
        const route = await agent.get('/').set('x-user', 'carol').expect(429)
        expect(route.headers['x-ratelimit-limit']).toBe('3')
        // The valued rule out-specifies the bare one: vip has 5 a minute (on a route without a rule).
        for (let i = 0; i < 5; i++) await agent.get('/bad').set('x-user', 'vip').expect(400)
        await agent.get('/bad').set('x-user', 'vip').expect(429)
        await agent.get('/bad').set('x-user', 'dave').expect(400)
        await agent.get('/bad').set('x-user', 'dave').expect(400)
        await agent.get('/bad').set('x-user', 'dave').expect(429)
      })

      test('a request no rule matches passes without headers; unlimited rules pass', async () => {
        const agent = await start({
          descriptors: async (req) => descriptors(req),
          rules: {
            domain: 'api',
            descriptors: [
              { key: 'user', rate_limit: minute(1) },
              { key: 'user', value: 'admin', unlimited: true },
            ],
          },
        })
        for (let i = 0; i < 3; i++) {
          const anonymous = await agent.get('/').expect(200)
          expect(anonymous.headers['x-ratelimit-limit']).toBeUndefined()
          expect(anonymous.body.remaining).toBeNull()
          const admin = await agent.get('/').set('x-user', 'admin').expect(200)
          expect(admin.headers['x-ratelimit-limit']).toBeUndefined()
        }
        await agent.get('/').set('x-user', 'eve').expect(200)
        await agent.get('/').set('x-user', 'eve').expect(429)
      })

      test('a shadow rule never blocks and sends no headers; enforced rules still count', async () => {
        const agent = await start({
          clock: fakeClock(T0).read,
          descriptors,
          rules: {
            domain: 'api',
            descriptors: [
              { key: 'route', value: '/', rate_limit: minute(4) },
              { key: 'user', rate_limit: minute(1), shadow_mode: true },
            ],
          },
          standardHeaders: 'draft-8',
        })
        for (const remaining of [3, 2, 1, 0]) {
          const res = await agent.get('/').set('x-user', 'alice').expect(200)
          // Only the enforced route rule shows; the shadow one (over its limit) is silent.
          expect(res.headers['x-ratelimit-limit']).toBe('4')
          expect(res.headers['x-ratelimit-remaining']).toBe(String(remaining))
          expect(res.headers['ratelimit-policy']).toBe('"api.route_/";q=4;w=60')
        }
        await agent.get('/').set('x-user', 'alice').expect(429)
        // Shadow rules alone: always admitted, never a header.
        for (let i = 0; i < 3; i++) {
          const res = await agent.get('/bad').set('x-user', 'alice').expect(400)
          expect(res.headers['x-ratelimit-limit']).toBeUndefined()
          expect(res.headers['retry-after']).toBeUndefined()
        }
      })

      test('hot reload: a changed rules file applies between requests', async () => {
        const dir = mkdtempSync(join(tmpdir(), 'sluice-rules-'))
        const file = join(dir, 'rules.yaml')
        const yaml = (n: number) =>
          `domain: api\ndescriptors:\n  - key: user\n    rate_limit: { unit: minute, requests_per_unit: ${n} }\n`
        writeFileSync(file, yaml(1))
        const logger = captureLogger()
        try {
          const agent = await start({ clock: fakeClock(T0).read, descriptors, rules: file, logger })
          await agent.get('/').set('x-user', 'alice').expect(200)
          await agent.get('/').set('x-user', 'alice').expect(429)
          writeFileSync(
            file,
            'domain: api\ndescriptors:\n  - key: user\n    rate_limit: { unit: fortnight }\n',
          )
          // An invalid version is reported and the old rules stay in force.
          for (let i = 0; i < 100 && logger.warnings.length === 0; i++) await sleep(20)
          expect(logger.warnings[0]).toMatch(/rules not reloaded/)
          await agent.get('/').set('x-user', 'alice').expect(429)
          writeFileSync(file, yaml(3))
          // Probe with fresh users (each counted apart) until the new limit shows.
          let limit: string | undefined
          for (let i = 0; i < 100 && limit !== '3'; i++) {
            await sleep(20)
            limit = (await agent.get('/').set('x-user', `probe-${i}`)).headers['x-ratelimit-limit']
          }
          expect(limit).toBe('3')
          // A changed limit is a new policy: alice counts afresh under it.
          for (const remaining of [2, 1, 0]) {
            const res = await agent.get('/').set('x-user', 'alice').expect(200)
            expect(res.headers['x-ratelimit-remaining']).toBe(String(remaining))
          }
          await agent.get('/').set('x-user', 'alice').expect(429)
        } finally {
          rmSync(dir, { recursive: true, force: true })
        }
      })

      test('onDecision: one event per matched rule per request, shadow rules included', async () => {
        const events: DecisionEvent[] = []
        const agent = await start({
          clock: fakeClock(T0).read,
          descriptors,
          rules: {
            domain: 'api',
            descriptors: [
              { key: 'route', value: '/', name: 'root', rate_limit: minute(3) },
              { key: 'user', name: 'per-user', rate_limit: minute(2) },
              {
                key: 'route',
                value: '/bad',
                name: 'bad-shadow',
                rate_limit: minute(1),
                shadow_mode: true,
              },
            ],
          },
          onDecision: (event) => void events.push(event),
        })
        await agent.get('/').set('x-user', 'alice').expect(200)
        await agent.get('/').set('x-user', 'alice').expect(200)
        await agent.get('/').set('x-user', 'alice').expect(429) // per-user rejects
        await agent.get('/').set('x-user', 'bob').expect(200) // the route's 3rd
        await agent.get('/').set('x-user', 'carol').expect(429) // the route rejects
        await agent.get('/bad').expect(400) // the shadow rule admits
        await agent.get('/bad').expect(400) // the shadow rule would reject: not blocked
        const tally: Record<string, Record<string, number>> = {}
        for (const event of events) {
          const outcome = event.allowed ? 'allowed' : event.shadow ? 'shadowRejected' : 'rejected'
          tally[event.policy] ??= {}
          tally[event.policy][outcome] = (tally[event.policy][outcome] ?? 0) + 1
        }
        expect(tally).toEqual({
          root: { allowed: 4, rejected: 1 },
          'per-user': { allowed: 4, rejected: 1 },
          'bad-shadow': { allowed: 1, shadowRejected: 1 },
        })
        expect(events.filter((e) => e.shadow).map((e) => e.key)).toEqual([
          'api|route=/bad',
          'api|route=/bad',
        ])
      })

      test('closing the app closes the watcher of a rules file path', async () => {
        const dir = mkdtempSync(join(tmpdir(), 'sluice-rules-'))
        const file = join(dir, 'rules.yaml')
        const invalid = (unit: string) =>
          `domain: api\ndescriptors:\n  - key: user\n    rate_limit: { unit: ${unit} }\n`
        writeFileSync(
          file,
          'domain: api\ndescriptors:\n  - key: user\n    rate_limit: { unit: minute, requests_per_unit: 1 }\n',
        )
        const logger = captureLogger()
        try {
          const app = await harness.start({ descriptors, rules: file, logger })
          await request(app.server).get('/').set('x-user', 'alice').expect(200)
          // The watcher is live: an invalid version is reported.
          writeFileSync(file, invalid('fortnight'))
          for (let i = 0; i < 100 && logger.warnings.length === 0; i++) await sleep(20)
          expect(logger.warnings).toHaveLength(1)
          await app.close()
          // Closed: another invalid version goes unread (the debounce is 100 ms).
          writeFileSync(file, invalid('decade'))
          await sleep(300)
          expect(logger.warnings).toHaveLength(1)
        } finally {
          rmSync(dir, { recursive: true, force: true })
        }
      })

      test('bad rules options fail at start-up with a ConfigError naming them', async () => {
        const rules = { domain: 'api', descriptors: [{ key: 'user', rate_limit: minute(1) }] }
        await expect(harness.start({ rules })).rejects.toThrow(
          /`descriptors` must be a function .* when `rules` is given; got undefined/,
        )
        await expect(harness.start({ descriptors })).rejects.toThrow(
          /`descriptors` must be unset unless `rules` is given/,
        )
        await expect(harness.start({ rules, descriptors, limit: 5 })).rejects.toThrow(
          /`limit` must be unset when `rules` is given/,
        )
        await expect(
          harness.start({
            rules: { domain: 'api', descriptors: [{ key: 'user', rate_limits: {} }] } as never,
            descriptors,
          }),
        ).rejects.toThrow(/unknown key `rate_limits` in `descriptors\[0\]`/)
      })
    })

    describe('queue: hold instead of 429', () => {
      test('requests over the limit are held for their slot, in order, none early', async () => {
        // 20 a second, burst 1: slots 50 ms apart; the fake clock stands still, the hold is real.
        const agent = await start({
          algorithm: 'gcra',
          limit: 20,
          window: '1s',
          burst: 1,
          clock: fakeClock(T0).read,
          queue: { maxWaitMs: 500 },
        })
        const started = performance.now()
        const done: number[] = []
        await Promise.all(
          [0, 1, 2, 3].map(async (i) => {
            await agent.get('/').set('x-n', String(i)).expect(200)
            done.push(performance.now() - started)
          }),
        )
        done.sort((a, b) => a - b)
        expect(done[3]).toBeGreaterThanOrEqual(149)
      })

      test('a wait longer than maxWaitMs is answered 429 at once', async () => {
        const agent = await start({
          algorithm: 'token-bucket',
          limit: 1,
          window: '1s',
          clock: fakeClock(T0).read,
          queue: { maxWaitMs: 200 },
        })
        await agent.get('/').expect(200)
        const stalls = watchStalls()
        const started = performance.now()
        const res = await agent.get('/').expect(429)
        const elapsed = performance.now() - started
        // Not held until maxWaitMs (the slot is 1 s away) and then refused: refused at once.
        expect(elapsed).toBeLessThan(100 + stalls.stop())
        expect(res.headers['retry-after']).toBe('1')
      })

      test('a client that disconnects while queued gives its slot back', async () => {
        // 10 a second, burst 1: the second request is held 100 ms. A third may wait 150 ms:
        // enough for the slot after the first (100 ms), not for one after the second (200 ms).
        const { key, keyed } = noticeKeying(2)
        const agent = await start({
          algorithm: 'gcra',
          limit: 10,
          window: '1s',
          burst: 1,
          clock: fakeClock(T0).read,
          queue: { maxWaitMs: 150 },
          key,
        })
        const { port } = open[open.length - 1].server.address() as AddressInfo
        await agent.get('/').expect(200)
        await abandonRequest(port, keyed)
        await settle()
        await agent.get('/').expect(200)
      })

      test('queue with rules: meter rules hold, the request goes on at its slot', async () => {
        const agent = await start({
          clock: fakeClock(T0).read,
          descriptors: (req) => [['user', req.headers['x-user'] as string | undefined]],
          rules: {
            domain: 'api',
            descriptors: [
              {
                key: 'user',
                rate_limit: { unit: 'second', requests_per_unit: 20, algorithm: 'gcra', burst: 1 },
              },
            ],
          },
          queue: { maxWaitMs: 60 },
        })
        const results = await Promise.all(
          [0, 1, 2].map((i) => agent.get('/').set('x-user', 'alice').set('x-n', String(i))),
        )
        expect(results.map((r) => r.status).sort()).toEqual([200, 200, 429])
      })

      test('queue needs a meter algorithm and a positive maxWaitMs (ConfigError at start-up)', async () => {
        await expect(harness.start({ limit: 5, queue: { maxWaitMs: 100 } })).rejects.toThrow(
          /`algorithm` must be a meter algorithm .* when `queue` is given.*got "sliding-window"/,
        )
        await expect(
          harness.start({ algorithm: 'gcra', limit: 5, queue: { maxWaitMs: 0 } }),
        ).rejects.toThrow(/`queue.maxWaitMs` must be a positive number of ms; got 0/)
        await expect(
          harness.start({ algorithm: 'gcra', limit: 5, queue: { maxWait: 10 } as never }),
        ).rejects.toThrow(/unknown option `maxWait` for queue/)
      })
    })

    describe('over a Redis store (a real redis-server): decided when the store answers', () => {
      let redis: RedisServer
      let client: Redis
      beforeAll(async () => {
        redis = await startRedis()
        client = new Redis({ host: redis.host, port: redis.port })
      })
      afterAll(async () => {
        client.disconnect()
        await redis.stop()
      })

      test('admitted requests go on with their headers and decision, the next one is 429', async () => {
        const { agent, clock } = await startFixedMinute(2, {
          // Client time: the fake clock decides, so every figure below is exact.
          store: new RedisStore({ client, time: 'client', prefix: `http-${Date.now()}` }),
        })
        const limited = await passUpToTheLimit(agent, clock, 2)
        expect(limited.body).toMatchObject({ error: 'Too Many Requests', retryAfter: 20 })
        // Many at once (batched in Redis as they come): each request gets its own answer.
        clock.now += 20_000
        const burst = await Promise.all([0, 1, 2, 3].map(() => agent.get('/')))
        expect(burst.map((r) => r.status).sort()).toEqual([200, 200, 429, 429])
      })
    })
  })
}
