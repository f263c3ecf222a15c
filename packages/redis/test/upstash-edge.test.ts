import { join } from 'node:path'
import { bundleForEdge, upstashUnderTest, type UpstashUnderTest } from '@sluice/testkit'
import { EdgeRuntime } from 'edge-runtime'

// examples/nextjs-upstash (middleware and route handler, RedisStore on the real @upstash/redis)
// on Vercel's edge runtime as edge-runtime emulates it (no Node built-ins, no Buffer, no
// setImmediate), through the REST gateway to a real redis-server. Bundled by esbuild from the
// built packages for a neutral platform, so a node: import anywhere on the path fails the build:
// run `npm run build` first (npm test does).

interface EdgeExports {
  middleware(request: Request): Promise<Response | undefined>
  GET(request: Request): Promise<Response>
  config: unknown
  runtime: unknown
}

let upstash: UpstashUnderTest
let runtime: EdgeRuntime
let edge: EdgeExports

beforeAll(async () => {
  upstash = await upstashUnderTest()
  const script = await bundleForEdge(join(__dirname, 'fixtures/nextjs-edge.ts'), 'edge')
  const env = {
    UPSTASH_REDIS_REST_URL: upstash.gateway.url,
    UPSTASH_REDIS_REST_TOKEN: upstash.gateway.token,
  }
  // Vercel's edge runtime has process.env (and nothing else of process).
  runtime = new EdgeRuntime({ extend: (context) => Object.assign(context, { process: { env } }) })
  runtime.evaluate(script)
  edge = runtime.context.edge as EdgeExports
})

afterAll(async () => {
  await upstash?.close()
})

/** A request from `ip`, made in the edge runtime's realm as the platform would make it. */
const from = (ip: string): Request =>
  new (runtime.context.Request as typeof Request)('https://app.test/api/hello', {
    headers: { 'x-real-ip': ip },
  })

test('the bundle has no Node built-ins, and the example says it runs on the edge', () => {
  expect(runtime.evaluate('typeof setImmediate + typeof Buffer + typeof require')).toBe(
    'undefinedundefinedundefined',
  )
  expect(edge.config).toEqual({ matcher: '/api/:path*' })
  expect(edge.runtime).toBe('edge')
})

test('middleware on the edge: lets exactly 100 a minute go on, answers 5 more with 429', async () => {
  const verdicts = await Promise.all(
    Array.from({ length: 105 }, () => edge.middleware(from('192.0.2.9'))),
  )
  expect(verdicts.filter((v) => v === undefined)).toHaveLength(100)
  expect(verdicts.filter((v) => v?.status === 429)).toHaveLength(5)
})

test('route handler on the edge: 10 a minute per client, one REST request per decision', async () => {
  const before = upstash.gateway.requests.pipeline + upstash.gateway.requests.single
  const statuses = []
  for (let i = 0; i < 12; i++) statuses.push((await edge.GET(from('192.0.2.1'))).status)
  expect(statuses).toEqual([...Array<number>(10).fill(200), 429, 429])
  // The 12th is refused by the block cache, off the network.
  expect(upstash.gateway.requests.pipeline + upstash.gateway.requests.single - before).toBe(11)
  expect((await edge.GET(from('192.0.2.2'))).status).toBe(200)
})
