import { upstashUnderTest, type UpstashUnderTest } from '@sluice/testkit'

// examples/nextjs-upstash: the route handler and the middleware, with the real @upstash/redis
// client from Redis.fromEnv(), through the REST gateway to a real redis-server, called with real
// Requests as Next.js calls them (next is not installed).

type Handler = (request: Request) => Promise<Response | undefined>

let upstash: UpstashUnderTest
let GET: Handler
let middleware: Handler
let config: unknown

beforeAll(async () => {
  upstash = await upstashUnderTest()
  process.env.UPSTASH_REDIS_REST_URL = upstash.gateway.url
  process.env.UPSTASH_REDIS_REST_TOKEN = upstash.gateway.token
  // Imported once the environment is set: the store reads it when the module loads.
  ;({ GET } = await import('../../../examples/nextjs-upstash/app/api/hello/route'))
  ;({ middleware, config } = await import('../../../examples/nextjs-upstash/middleware'))
})

afterAll(async () => {
  delete process.env.UPSTASH_REDIS_REST_URL
  delete process.env.UPSTASH_REDIS_REST_TOKEN
  await upstash.close()
})

const from = (ip: string) =>
  new Request('https://app.test/api/hello', { headers: { 'x-real-ip': ip } })

test('route handler: 10 a minute per client, one REST request per decision, then 429', async () => {
  const before = upstash.gateway.requests.pipeline + upstash.gateway.requests.single
  const first = (await GET(from('192.0.2.1'))) as Response
  expect(first.status).toBe(200)
  expect(await first.json()).toEqual({ hello: 'world', remaining: 9 })
  for (let i = 0; i < 9; i++) expect((await GET(from('192.0.2.1')))?.status).toBe(200)
  const sent = upstash.gateway.requests.pipeline + upstash.gateway.requests.single - before
  expect(sent).toBe(10)
  const refused = (await GET(from('192.0.2.1'))) as Response
  expect(refused.status).toBe(429)
  expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
  expect((await GET(from('192.0.2.2')))?.status).toBe(200)
})

test('middleware: lets 100 a minute go on, answers the 101st with its 429', async () => {
  expect(config).toEqual({ matcher: '/api/:path*' })
  const verdicts = await Promise.all(
    Array.from({ length: 105 }, () => middleware(from('192.0.2.9'))),
  )
  expect(verdicts.filter((v) => v === undefined)).toHaveLength(100)
  expect(verdicts.filter((v) => v?.status === 429)).toHaveLength(5)
})
