// The bench's Worker on DurableObjectStore: two limits per request (100 a second and 10,000 an
// hour per address), and the subrequests to Durable Objects each request made, counted by a
// wrapper around the namespace binding, in the x-subrequests header.
import { DurableObjectStore, SluiceLimiterObject } from '@sluice/cloudflare'
import type { DurableObjectNamespaceLike } from '@sluice/cloudflare'
import { rateLimit, type RateLimited } from '@sluice/fetch'

export { SluiceLimiterObject }

let limited: RateLimited | undefined
let subrequests = 0

function counted(namespace: DurableObjectNamespaceLike): DurableObjectNamespaceLike {
  return {
    idFromName: (name) => namespace.idFromName(name),
    get: (id) => {
      const stub = namespace.get(id)
      return {
        fetch: (input, init) => {
          subrequests++
          return stub.fetch(input, init)
        },
      }
    },
  }
}

export default {
  async fetch(request: Request, env: { SLUICE_LIMITER: DurableObjectNamespaceLike }) {
    if (new URL(request.url).pathname === '/plain') return new Response('ok')
    limited ??= rateLimit({
      limits: [
        { limit: 100, window: '1s' },
        { limit: 10_000, window: '1h' },
      ],
      store: new DurableObjectStore({ namespace: counted(env.SLUICE_LIMITER) }),
      ip: (r) => r.headers.get('cf-connecting-ip'),
    })
    const before = subrequests
    const response = await limited(request, () => new Response('ok'))
    const out = new Response(response.body, response)
    out.headers.set('x-subrequests', String(subrequests - before))
    return out
  },
}
