// The request's waitUntil (HttpLimiter.decide's third argument) reaches the store call on every
// path of the pipeline: a call that times out hands it its late work, once per request. The
// late refund itself is core's (packages/core/test/wait-until.test.ts); in real workerd through
// @sluice/fetch and @sluice/hono: packages/cloudflare/test/late-reply.test.ts.
import { MemoryStore, type Store } from '@sluice/core'
import type { HttpLimitOptions, HttpRequestLike } from '@sluice/http'
// Rules documents are read by @sluice/rules' host (Node's): the same pipeline.
import { createHttpLimiter } from '@sluice/rules'
import { DEFAULTS, RES } from './pipeline-fixtures'

/** A shared store whose consumes never answer: every call times out, its reply still pending. */
function hungStore(): Store {
  const memory = new MemoryStore()
  return {
    consume: () => new Promise(() => {}),
    peek: (request) => memory.peek(request),
    refund: (request) => memory.refund(request),
    penalize: (request) => memory.penalize(request),
    block: (request) => memory.block(request),
    reset: (key, policies) => memory.reset(key, policies),
  }
}

const base: HttpLimitOptions = {
  store: hungStore(),
  timeoutMs: 20,
  onStoreError: 'allow',
  breaker: false,
  logger: { warn: () => {} },
}

const request: HttpRequestLike = { ip: '10.0.0.1', headers: {} }

const paths: Array<[string, HttpLimitOptions]> = [
  ['the fast path (a fixed limit by address)', { limit: 5 }],
  ['a key option', { limit: 5, key: () => 'user-1' }],
  ['per-request limits', { limit: () => 5 }],
  ['queue (limiter.wait)', { limit: 5, algorithm: 'token-bucket', queue: { maxWaitMs: 1000 } }],
  [
    'rules',
    {
      rules: {
        domain: 'd',
        descriptors: [{ key: 'user', rate_limit: { unit: 'hour', requests_per_unit: 5 } }],
      },
      descriptors: () => [['user', 'u']],
    },
  ],
  [
    'rules with queue (rules wait)',
    {
      rules: {
        domain: 'q',
        descriptors: [
          { key: 'user', rate_limit: { unit: 'hour', requests_per_unit: 5, algorithm: 'gcra' } },
        ],
      },
      descriptors: () => [['user', 'u']],
      queue: { maxWaitMs: 1000 },
    },
  ],
]

test.each(paths)(
  '%s: a timed-out call hands its late work to waitUntil, once',
  async (_, given) => {
    const http = createHttpLimiter({ ...base, store: hungStore(), ...given }, DEFAULTS)
    const handed: Array<Promise<unknown>> = []
    const verdict = await http.decide(request, RES, (promise) => handed.push(promise))
    expect(verdict).toMatchObject({ action: 'allow', decision: { degraded: true } })
    expect(handed).toHaveLength(1)
    expect(handed[0]).toBeInstanceOf(Promise)
    // Without one, the same request is answered as before.
    const plain = await http.decide(request, RES)
    expect(plain).toMatchObject({ action: 'allow', decision: { degraded: true } })
  },
)
