// A Cloudflare Worker: 20 requests a minute per client address, counted in Durable Objects, so
// every isolate and location shares one count. Cloudflare sets cf-connecting-ip on every request
// that reaches a Worker; a client cannot forge it (docs/edge.md).
import { DurableObjectStore, SluiceLimiterObject } from '@sluice/cloudflare'
import { rateLimit, type RateLimited, type WaitUntilContext } from '@sluice/fetch'

// The Durable Object class the binding in wrangler.toml names.
export { SluiceLimiterObject }

interface Env {
  SLUICE_LIMITER: unknown
}

// Made on the first request: bindings arrive with it, not in global scope.
let limited: RateLimited | undefined

export default {
  // ctx: the ExecutionContext. A store reply later than timeoutMs (the request was answered by
  // onStoreError) is refunded after the response only if handed to ctx.waitUntil.
  async fetch(request: Request, env: Env, ctx: WaitUntilContext): Promise<Response> {
    limited ??= rateLimit({
      limit: 20,
      window: '1m',
      store: DurableObjectStore.fromEnv(env, 'SLUICE_LIMITER'),
      ip: (r) => r.headers.get('cf-connecting-ip'),
    })
    return limited(request, () => new Response('hello from the edge\n'), ctx)
  },
}
