/**
 * Owns what the HTTP scenarios are built on: the harness an adapter provides, fake clocks and
 * loggers, a failing store, client helpers, and the context every group of cases shares.
 */
import { createServer, get as httpGet, type RequestListener, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import request from 'supertest'
import { type Store } from '@sluice/core'
import { type HttpLimitOptions, type HttpRequestLike } from '@sluice/http'

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
  /**
   * Whether the framework has a trust-proxy setting the proxy warnings read (default true).
   * Fetch adapters have none (their `ip` option decides), so they are checked for no warning.
   */
  proxyTrust?: boolean
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

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * A `key` function (by client IP) that tells when the server has keyed its `nth` request: the
 * limiter decides in the same turn, so from then on that request is counted.
 */
export function noticeKeying(nth: number) {
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
export async function abandonRequest(port: number, counted: Promise<void>): Promise<void> {
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
export const settle = () => new Promise((resolve) => setTimeout(resolve, 5))

/** A minute-aligned time, so fixed windows reset a whole minute later. */
export const T0 = 60_000 * 30_000

/** What the scenario groups share: the adapter under test and ways to start an app on it. */
export interface ScenarioContext {
  readonly harness: AdapterHarness
  /** Starts an app with these options (on a clock standing 40 s into a minute unless given). */
  start(options: ScenarioOptions, setup?: ScenarioSetup): Promise<ReturnType<typeof request>>
  /** The reset X-RateLimit-Reset announces `seconds` from `now`, in this adapter's style. */
  legacyReset(now: number, seconds: number): string
  /** An app with a fixed window of `limit` per `window`, on a fake clock standing at `at`. */
  startFixed(
    limit: number,
    window: string,
    options?: ScenarioOptions,
    at?: number,
  ): Promise<{ agent: ReturnType<typeof request>; clock: ReturnType<typeof fakeClock> }>
  /** An app with a fixed window of `limit` per minute, on a fake clock 20 s before its end. */
  startFixedMinute(
    limit: number,
    options?: ScenarioOptions,
  ): Promise<{ agent: ReturnType<typeof request>; clock: ReturnType<typeof fakeClock> }>
  /**
   * On such an app, each request up to the limit passes with its remaining count and the reset
   * 20 s away; the next one is 429 with remaining 0 and Retry-After 20, returned for more checks.
   */
  passUpToTheLimit(
    agent: ReturnType<typeof request>,
    clock: ReturnType<typeof fakeClock>,
    limit: number,
  ): Promise<request.Response>
  /** The port of the app started last. */
  lastPort(): number
}

/** The shared helpers, with the apps a case started closed after it. */
export function openScenarios(harness: AdapterHarness): ScenarioContext {
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
  async function startFixed(limit: number, window: string, options: ScenarioOptions = {}, at = T0) {
    const clock = fakeClock(at)
    const agent = await start({
      limit,
      window,
      algorithm: 'fixed-window',
      clock: clock.read,
      ...options,
    })
    return { agent, clock }
  }

  function startFixedMinute(limit: number, options: ScenarioOptions = {}) {
    return startFixed(limit, '1m', options, T0 + 40_000)
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
  const lastPort = () => (open[open.length - 1].server.address() as AddressInfo).port
  return {
    harness,
    start,
    legacyReset,
    startFixed,
    startFixedMinute,
    passUpToTheLimit,
    lastPort,
  }
}
