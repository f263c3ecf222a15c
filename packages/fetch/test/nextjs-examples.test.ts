// examples/nextjs: the route handler and the middleware are plain (Request) => Response
// functions, called here with real Requests as Next.js calls them (next is not installed).
import { GET } from '../../../examples/nextjs/app/api/hello/route'
import { config, middleware } from '../../../examples/nextjs/middleware'

const from = (ip: string) =>
  new Request('https://app.test/api/hello', { headers: { 'x-real-ip': ip } })

test('route handler: 10 a minute per client, with the headers, then 429', async () => {
  const first = await GET(from('192.0.2.1'))
  expect(first.status).toBe(200)
  expect(await first.json()).toEqual({ hello: 'world', remaining: 9 })
  expect(first.headers.get('x-ratelimit-limit')).toBe('10')
  expect(first.headers.get('x-ratelimit-remaining')).toBe('9')
  for (let i = 0; i < 9; i++) expect((await GET(from('192.0.2.1'))).status).toBe(200)
  const refused = await GET(from('192.0.2.1'))
  expect(refused.status).toBe(429)
  expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
  expect(((await refused.json()) as { error: string }).error).toBe('Too Many Requests')
  expect((await GET(from('192.0.2.2'))).status).toBe(200)
})

test('middleware: lets 100 a minute go on (undefined), answers the 101st with its 429', async () => {
  expect(config).toEqual({ matcher: '/api/:path*' })
  for (let i = 0; i < 100; i++) expect(await middleware(from('192.0.2.9'))).toBeUndefined()
  const refused = await middleware(from('192.0.2.9'))
  expect(refused!.status).toBe(429)
  expect(refused!.headers.get('x-ratelimit-limit')).toBe('100')
  expect(refused!.headers.get('x-ratelimit-remaining')).toBe('0')
  expect(await middleware(from('192.0.2.10'))).toBeUndefined()
})
