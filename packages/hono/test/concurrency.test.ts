// `concurrency` with Hono: the slot is held until the response body has been sent (`stream()`
// runs on after the handler returned), never leaked; stacked middlewares keep the inner one's
// headers.
import { setTimeout as delay } from 'node:timers/promises'
import { Hono } from 'hono'
import { stream } from 'hono/streaming'
import { concurrencySlotKey, MemoryStore } from '@sluice/core'
import { rateLimiter, type RateLimitVariables } from '@sluice/hono'

const KEY = 'client'
const NOW = 60_000 * 1000 + 40_000
const clock = () => NOW

/** A released promise: `open()` lets the stream go on. */
function gate() {
  let open!: () => void
  const opened = new Promise<void>((resolve) => (open = resolve))
  return { opened, open }
}

/** An app with one limiter of `concurrency: 1`: `/stream` writes 'a', waits for `wait`, writes 'b'. */
function app(wait: Promise<void>, onAbort = () => {}) {
  const store = new MemoryStore()
  const hono = new Hono<{ Variables: RateLimitVariables }>()
  hono.use(rateLimiter({ concurrency: 1, key: () => KEY, store, clock }))
  hono.get('/stream', (c) =>
    stream(c, async (s) => {
      s.onAbort(onAbort)
      await s.write('a')
      await wait
      await s.write('b')
    }),
  )
  hono.get('/', (c) => c.text('ok'))
  hono.get('/boom', () => {
    throw new Error('boom')
  })
  hono.onError((_error, c) => c.text('failed', 500))
  /** Slots of KEY held now, once the releases out have reached the store. */
  async function slotsHeld(): Promise<number> {
    await delay(1)
    return store.slots.count(concurrencySlotKey(KEY, 1), NOW)
  }
  return { hono, slotsHeld }
}

describe('@sluice/hono concurrency: the slot is held until the body has been sent', () => {
  test('a stream() body holds it: another request gets 429 until the stream ends', async () => {
    const { opened, open } = gate()
    const { hono, slotsHeld } = app(opened)
    const first = await hono.request('/stream')
    expect(first.status).toBe(200)
    expect(await slotsHeld()).toBe(1)
    const refused = await hono.request('/')
    expect(refused.status).toBe(429)
    expect(refused.headers.get('x-ratelimit-limit')).toBe('1')
    expect(refused.headers.get('x-ratelimit-remaining')).toBe('0')
    open()
    expect(await first.text()).toBe('ab')
    expect(await slotsHeld()).toBe(0)
    const next = await hono.request('/')
    expect(next.status).toBe(200)
    expect(await next.text()).toBe('ok')
  })

  test('a client that cancels mid-stream gives it back, and stream() sees the abort', async () => {
    const aborted = jest.fn()
    const { hono, slotsHeld } = app(new Promise(() => {}), aborted)
    const first = await hono.request('/stream')
    const reader = first.body!.getReader()
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('a')
    expect(await slotsHeld()).toBe(1)
    await reader.cancel()
    expect(await slotsHeld()).toBe(0)
    expect(aborted).toHaveBeenCalledTimes(1)
    expect((await hono.request('/')).status).toBe(200)
  })

  test('HEAD (Hono drops the GET body unread) and a throwing handler (its 500) give it back', async () => {
    const { hono, slotsHeld } = app(Promise.resolve())
    const head = await hono.request('/', { method: 'HEAD' })
    expect(head.status).toBe(200)
    expect(await slotsHeld()).toBe(0)
    const failed = await hono.request('/boom')
    expect(failed.status).toBe(500)
    expect(await failed.text()).toBe('failed')
    expect(await slotsHeld()).toBe(0)
    expect((await hono.request('/')).status).toBe(200)
  })
})

test('stacked middlewares: the inner limiter’s 200 and 429 carry its own headers (as on Express)', async () => {
  const common = { window: '1m', algorithm: 'fixed-window', clock, key: () => KEY } as const
  const hono = new Hono()
  hono.use(rateLimiter({ ...common, limit: 100, standardHeaders: 'draft-7' }))
  hono.use('/login', rateLimiter({ ...common, limit: 1, standardHeaders: 'draft-7' }))
  hono.get('/login', (c) => c.text('ok'))
  hono.get('/', (c) => c.text('ok'))
  const headersOf = (response: Response) => ({
    status: response.status,
    limit: response.headers.get('x-ratelimit-limit'),
    remaining: response.headers.get('x-ratelimit-remaining'),
    retryAfter: response.headers.get('retry-after'),
    ratelimit: response.headers.get('ratelimit'),
    policy: response.headers.get('ratelimit-policy'),
  })
  const inner = { limit: '1', remaining: '0', policy: '1;w=60' }
  const ratelimit = 'limit=1, remaining=0, reset=20'
  expect(headersOf(await hono.request('/login'))).toEqual({
    status: 200,
    ...inner,
    retryAfter: null,
    ratelimit,
  })
  expect(headersOf(await hono.request('/login'))).toEqual({
    status: 429,
    ...inner,
    retryAfter: '20',
    ratelimit,
  })
  // Where the route limiter does not run, the global one's headers: it counted all three.
  expect(headersOf(await hono.request('/'))).toMatchObject({
    status: 200,
    limit: '100',
    remaining: '97',
  })
})
