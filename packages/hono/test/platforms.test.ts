/**
 * docs/proxies.md's table "what is safe to trust on each platform", row by row, through the real
 * adapters (@sluice/fetch and @sluice/hono with Hono's own getConnInfo helpers): requests carry
 * the headers each platform sets, plus a client's attempt to pick its address with
 * X-Forwarded-For. Each client must get its own bucket, the spoof none, and no proxy warning.
 * hono/deno and hono/bun do not load on Node (their index touches Deno and Bun); their
 * getConnInfo helpers are loaded from their own files.
 */
import { join } from 'node:path'
import { getConnInfo as nodeConnInfo } from '@hono/node-server/conninfo'
import { Hono } from 'hono'
import { getConnInfo as cloudflareConnInfo } from 'hono/cloudflare-workers'
import type { GetConnInfo } from 'hono/conninfo'
import { getConnInfo as vercelConnInfo } from 'hono/vercel'
import { captureLogger, serveFetch, type NodeBindings } from '@sluice/testkit'
import { resetProxyWarnings } from '@sluice/http'
import { rateLimit, type FetchRateLimitOptions } from '@sluice/fetch'
import { rateLimiter, type HonoRateLimitOptions } from '@sluice/hono'
import request from 'supertest'

const honoDist = join(__dirname, '../../../node_modules/hono/dist/cjs/adapter')
// eslint-disable-next-line @typescript-eslint/no-require-imports
const denoConnInfo = (require(join(honoDist, 'deno/conninfo.js')) as { getConnInfo: GetConnInfo })
  .getConnInfo
// eslint-disable-next-line @typescript-eslint/no-require-imports
const bunConnInfo = (require(join(honoDist, 'bun/conninfo.js')) as { getConnInfo: GetConnInfo })
  .getConnInfo

const ok = () => new Response('ok')
type Env = Record<string, unknown>
type Ask = (headers: Record<string, string>, env: Env) => Promise<number>

/** Both adapters for one platform: how each is set up, and how a request reaches it. */
function adapters(
  fetchOptions: (env: () => Env) => FetchRateLimitOptions,
  honoOptions: HonoRateLimitOptions,
): Array<[string, Ask]> {
  const common = { limit: 1, window: '1m' }
  let current: Env = {}
  const limited = rateLimit({ ...common, ...fetchOptions(() => current) })
  const app = new Hono()
  app.use(rateLimiter({ ...common, ...honoOptions }))
  app.get('/', (c) => c.text('ok'))
  const url = 'https://app.test/'
  return [
    [
      '@sluice/fetch',
      async (headers, env) => {
        current = env
        return (await limited(new Request(url, { headers }), ok)).status
      },
    ],
    ['@sluice/hono', async (headers, env) => (await app.request(url, { headers }, env)).status],
  ]
}

beforeEach(() => resetProxyWarnings())

describe.each([
  {
    platform: 'Cloudflare Workers: cf-connecting-ip',
    headerPlatform: true,
    make: (logger: ReturnType<typeof captureLogger>) =>
      adapters(() => ({ logger, ip: (r) => r.headers.get('cf-connecting-ip') }), {
        logger,
        getConnInfo: cloudflareConnInfo,
      }),
    // Cloudflare sets cf-connecting-ip, and appends the client to what it was sent as X-Forwarded-For.
    from: (client: string, spoof?: string) => ({
      headers: {
        'cf-connecting-ip': client,
        'x-forwarded-for': spoof === undefined ? client : `${spoof}, ${client}`,
      },
      env: {},
    }),
  },
  {
    platform: 'Vercel: x-real-ip',
    headerPlatform: true,
    make: (logger: ReturnType<typeof captureLogger>) =>
      adapters(() => ({ logger, ip: (r) => r.headers.get('x-real-ip') }), {
        logger,
        getConnInfo: vercelConnInfo,
      }),
    // Vercel overwrites X-Forwarded-For and x-real-ip with the address it saw.
    from: (client: string) => ({
      headers: { 'x-real-ip': client, 'x-forwarded-for': client },
      env: {},
    }),
  },
  {
    platform: 'Deno.serve / Deno Deploy: info.remoteAddr',
    headerPlatform: false,
    make: (logger: ReturnType<typeof captureLogger>) =>
      adapters(
        (env) => ({
          logger,
          ip: () => (env().remoteAddr as { hostname: string }).hostname,
        }),
        { logger, getConnInfo: denoConnInfo },
      ),
    from: (client: string, spoof?: string) => ({
      headers: (spoof === undefined ? {} : { 'x-forwarded-for': spoof }) as Record<string, string>,
      env: { remoteAddr: { hostname: client, port: 40000, transport: 'tcp' } },
    }),
  },
  {
    platform: 'Bun.serve: server.requestIP',
    headerPlatform: false,
    make: (logger: ReturnType<typeof captureLogger>) =>
      adapters(
        (env) => ({
          logger,
          ip: (r) =>
            (env().server as { requestIP(r: Request): { address: string } }).requestIP(r).address,
        }),
        { logger, getConnInfo: bunConnInfo },
      ),
    from: (client: string, spoof?: string) => {
      const server = { requestIP: () => ({ address: client, family: 'IPv4', port: 40000 }) }
      return {
        headers: (spoof === undefined ? {} : { 'x-forwarded-for': spoof }) as Record<
          string,
          string
        >,
        env: { server },
      }
    },
  },
])('$platform', ({ make, from, headerPlatform }) => {
  test.each([0, 1])(
    'each client its own bucket, a forged X-Forwarded-For none (adapter %#)',
    async (index) => {
      const logger = captureLogger()
      const [, ask] = make(logger)[index]
      const send = (client: string, spoof?: string) => {
        const { headers, env } = from(client, spoof)
        return ask(headers, env)
      }
      expect(await send('203.0.113.1')).toBe(200)
      expect(await send('203.0.113.1')).toBe(429)
      expect(await send('203.0.113.2')).toBe(200)
      // The spoofer is still itself: the forged entry is no fresh bucket, nor the victim's.
      expect(await send('203.0.113.1', '198.51.100.66')).toBe(429)
      expect(await send('198.51.100.66')).toBe(200)
      // Where the platform names the client in X-Forwarded-For too, nothing is warned; where a
      // client's own X-Forwarded-For arrives unchanged (Deno, Bun without a proxy), the one
      // warning that it is not trusted.
      if (headerPlatform) expect(logger.warnings).toEqual([])
      else {
        expect(logger.warnings).toEqual([
          expect.stringMatching(
            /X-Forwarded-For but (Fetch|Hono) does not trust its sender \(203\.0\.113\.1\)/,
          ),
        ])
      }
    },
  )
})

describe('Node (@hono/node-server) behind your proxy: trustProxy', () => {
  const open: Array<{ close(): Promise<void> }> = []
  afterEach(async () => {
    await Promise.all(open.splice(0).map((served) => served.close()))
  })

  /** Real sockets from 127.0.0.1 (the proxy hop), the client in X-Forwarded-For. */
  async function serve(trust: FetchRateLimitOptions['trustProxy'], logger = captureLogger()) {
    const common = { limit: 1, window: '1m', logger, trustProxy: trust }
    const sockets = new WeakMap<Request, string | undefined>()
    const limited = rateLimit({ ...common, ip: (r) => sockets.get(r) })
    const viaFetch = await serveFetch((req: Request, env: NodeBindings) => {
      sockets.set(req, env.incoming.socket.remoteAddress)
      return limited(req, ok)
    })
    const app = new Hono()
    app.use(rateLimiter({ ...common, getConnInfo: nodeConnInfo }))
    app.get('/', (c) => c.text('ok'))
    const viaHono = await serveFetch(app.fetch)
    open.push(viaFetch, viaHono)
    return { logger, servers: [viaFetch, viaHono] }
  }

  test.each([1, 'loopback', ['127.0.0.1/32']])(
    'trustProxy %p: each client behind the proxy its own bucket, a prepended forgery ignored',
    async (trust) => {
      const { logger, servers } = await serve(trust)
      for (const { server } of servers) {
        const send = (forwarded: string) =>
          request(server).get('/').set('X-Forwarded-For', forwarded)
        await send('203.0.113.1').expect(200)
        await send('203.0.113.1').expect(429)
        await send('203.0.113.2').expect(200)
        // The client wrote its own X-Forwarded-For; the proxy appended the real address.
        await send('198.51.100.66, 203.0.113.1').expect(429)
      }
      expect(logger.warnings).toEqual([])
    },
  )

  test('without trustProxy every client shares the proxy bucket: warned once per adapter', async () => {
    const { logger, servers } = await serve(undefined)
    for (const { server } of servers) {
      await request(server).get('/').set('X-Forwarded-For', '203.0.113.1').expect(200)
      await request(server).get('/').set('X-Forwarded-For', '203.0.113.2').expect(429)
    }
    expect(logger.warnings).toEqual([
      expect.stringMatching(
        /X-Forwarded-For but Fetch does not trust its sender \(127\.0\.0\.1\)[\s\S]*trustProxy: 1/,
      ),
      expect.stringMatching(
        /X-Forwarded-For but Hono does not trust its sender \(127\.0\.0\.1\)[\s\S]*rateLimiter\(\{ getConnInfo, trustProxy: 1 \}\)/,
      ),
    ])
  })

  test('trustProxy true takes the first entry, which any client picks: warned once per adapter', async () => {
    const { logger, servers } = await serve(true)
    for (const { server } of servers) {
      await request(server).get('/').set('X-Forwarded-For', '198.51.100.1, 203.0.113.1').expect(200)
      // A new forged first entry per request is a new bucket: why `true` is never safe.
      await request(server).get('/').set('X-Forwarded-For', '198.51.100.2, 203.0.113.1').expect(200)
    }
    expect(logger.warnings).toEqual([
      expect.stringMatching(/Fetch trusts every proxy/),
      expect.stringMatching(/Hono trusts every proxy/),
    ])
  })

  test('bad trustProxy values are ConfigErrors naming the option', () => {
    expect(() => rateLimit({ trustProxy: -1 })).toThrow(/`trustProxy` must be a whole number/)
    expect(() => rateLimit({ trustProxy: ['10.0.0.0/33'] })).toThrow(
      /`trustProxy\[\]` must be an IP address, a CIDR range/,
    )
    expect(() =>
      rateLimiter({ getConnInfo: nodeConnInfo, trustProxy: { hops: 1 } as never }),
    ).toThrow(/`trustProxy` must be a boolean, a hop count, or addresses/)
  })
})
