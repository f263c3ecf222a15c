// Next.js route handler (app/api/hello/route.ts): 10 requests a minute per client. On Vercel the
// platform sets x-real-ip; behind your own proxy, read the address it sets.
import { rateLimit } from '@sluice/fetch'

const limited = rateLimit({
  limit: 10,
  window: '1m',
  ip: (request) => request.headers.get('x-real-ip'),
})

export const GET = (request: Request): Promise<Response> =>
  limited(request, (_request, decision) =>
    Response.json({ hello: 'world', remaining: decision?.remaining }),
  )
