// Next.js route handler (app/api/hello/route.ts): 10 requests a minute per client, counted in
// Upstash. On Vercel the platform sets x-real-ip; behind your own proxy, read what it sets.
import { rateLimit } from '@sluice/fetch'
import { store } from '../../../lib/store'

const limited = rateLimit({
  limit: 10,
  window: '1m',
  store,
  ip: (request) => request.headers.get('x-real-ip'),
})

// The edge runtime; 'nodejs' (the default) works the same.
export const runtime = 'edge'

export const GET = (request: Request): Promise<Response> =>
  limited(request, (_request, decision) =>
    Response.json({ hello: 'world', remaining: decision?.remaining }),
  )
