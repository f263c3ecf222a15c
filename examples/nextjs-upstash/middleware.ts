// Next.js middleware (middleware.ts at the project root): 100 requests a minute per client on
// every /api route, counted in Upstash, checked before the route runs. Returning nothing lets
// Next.js go on to the route. It runs on the edge runtime, middleware's default: RedisStore
// and @upstash/redis use web APIs only.
import { rateLimit } from '@sluice/fetch'
import { store } from './lib/store'

const limited = rateLimit({
  limit: 100,
  window: '1m',
  store,
  ip: (request) => request.headers.get('x-real-ip'),
})

export async function middleware(request: Request): Promise<Response | undefined> {
  const verdict = await limited.check(request)
  return verdict.response
}

export const config = { matcher: '/api/:path*' }
