// Next.js middleware (middleware.ts at the project root): 100 requests a minute per client on
// every /api route, checked before the route runs. A refused request is answered here (429 with
// Retry-After); returning nothing lets Next.js go on to the route.
import { rateLimit } from '@sluice/fetch'

const limited = rateLimit({
  limit: 100,
  window: '1m',
  ip: (request) => request.headers.get('x-real-ip'),
})

export async function middleware(request: Request): Promise<Response | undefined> {
  const verdict = await limited.check(request)
  return verdict.response
}

export const config = { matcher: '/api/:path*' }
