// `concurrency` on Fetch: the slot is held until the response is over, which for a body is when
// it has been sent (a handler returns a streamed Response long before that), never leaked; check()
// refuses it; and stacked limiters keep the inner one's headers.
import { setTimeout as delay } from 'node:timers/promises'
import { concurrencySlotKey, type SlotLease } from '@sluice/core'
import { ConfigError, rateLimit, type RateLimited } from '@sluice/fetch'

const KEY = 'client'
const key = () => KEY
const request = (init?: RequestInit) => new Request('http://example.test/', init)
const ok = () => new Response('ok')

/** Slots of KEY the limiter's store holds now, once the releases out have reached it. */
async function slotsHeld(limited: RateLimited, limit = 1): Promise<number> {
  await delay(1)
  return limited.store.slots!.count(concurrencySlotKey(KEY, limit), limited.limiter!.clock())
}

/** A Response body the test writes, ends or breaks; `cancelled` sees a cancel reach it. */
function controlledBody() {
  let controller!: ReadableStreamDefaultController<Uint8Array>
  const cancelled = jest.fn()
  const stream = new ReadableStream<Uint8Array>({
    start: (c) => void (controller = c),
    cancel: cancelled,
  })
  return {
    stream,
    cancelled,
    write: (text: string) => controller.enqueue(new TextEncoder().encode(text)),
    end: () => controller.close(),
    fail: (error: Error) => controller.error(error),
  }
}

/** A handler answering `body`, spying on its slot's release (to count the calls). */
function streaming(body: ReadableStream<Uint8Array>) {
  const spy: { release?: jest.SpyInstance } = {}
  const handler = (_request: Request, decision: { slot?: SlotLease } | undefined) => {
    spy.release = jest.spyOn(decision!.slot!, 'release')
    return new Response(body)
  }
  return { handler, spy }
}

describe('concurrency: the slot is held until the response body has been sent', () => {
  test('a streamed body holds it: a second request is refused until the body is read to its end', async () => {
    const limited = rateLimit({ concurrency: 1, key })
    const body = controlledBody()
    const { handler, spy } = streaming(body.stream)
    const first = await limited(request(), handler)
    expect(first.status).toBe(200)
    expect(await slotsHeld(limited)).toBe(1)
    const second = jest.fn(ok)
    const refused = await limited(request(), second)
    expect(refused.status).toBe(429)
    expect(refused.headers.get('x-ratelimit-limit')).toBe('1')
    expect(refused.headers.get('x-ratelimit-remaining')).toBe('0')
    expect(second).not.toHaveBeenCalled()
    body.write('a')
    body.write('b')
    body.end()
    expect(await first.text()).toBe('ab')
    expect(await slotsHeld(limited)).toBe(0)
    expect(spy.release).toHaveBeenCalledTimes(1)
    const third = await limited(request(), ok)
    expect(third.status).toBe(200)
    expect(await third.text()).toBe('ok')
  })

  test('a client that cancels mid-stream gives it back, once, and the cancel reaches the handler’s stream', async () => {
    const limited = rateLimit({ concurrency: 1, key })
    const body = controlledBody()
    const { handler, spy } = streaming(body.stream)
    const first = await limited(request(), handler)
    const reader = first.body!.getReader()
    body.write('a')
    expect((await reader.read()).value).toEqual(new TextEncoder().encode('a'))
    expect(await slotsHeld(limited)).toBe(1)
    await reader.cancel('client gone')
    expect(body.cancelled).toHaveBeenCalledWith('client gone')
    expect(await slotsHeld(limited)).toBe(0)
    expect(spy.release).toHaveBeenCalledTimes(1)
    expect((await limited(request(), ok)).status).toBe(200)
  })

  test('a body that errors gives it back, once', async () => {
    const limited = rateLimit({ concurrency: 1, key })
    const body = controlledBody()
    const { handler, spy } = streaming(body.stream)
    const first = await limited(request(), handler)
    body.fail(new Error('upstream broke'))
    await expect(first.text()).rejects.toThrow('upstream broke')
    expect(await slotsHeld(limited)).toBe(0)
    expect(spy.release).toHaveBeenCalledTimes(1)
    expect((await limited(request(), ok)).status).toBe(200)
  })

  test('the request’s signal aborting mid-stream gives it back, once', async () => {
    const limited = rateLimit({ concurrency: 1, key })
    const body = controlledBody()
    const { handler, spy } = streaming(body.stream)
    const client = new AbortController()
    await limited(request({ signal: client.signal }), handler)
    expect(await slotsHeld(limited)).toBe(1)
    client.abort()
    expect(await slotsHeld(limited)).toBe(0)
    expect(spy.release).toHaveBeenCalledTimes(1)
  })

  test('a body-less response, a HEAD response and a throwing handler give it back at once', async () => {
    const limited = rateLimit({ concurrency: 1, key })
    const empty = await limited(request(), () => new Response(null, { status: 204 }))
    expect(empty.status).toBe(204)
    expect(await slotsHeld(limited)).toBe(0)
    // Its body is never sent (servers and Hono drop it unread): nothing may wait for it.
    const head = await limited(request({ method: 'HEAD' }), () => new Response('never sent'))
    expect(head.status).toBe(200)
    expect(await slotsHeld(limited)).toBe(0)
    await expect(
      limited(request(), () => {
        throw new Error('boom')
      }),
    ).rejects.toThrow('boom')
    expect(await slotsHeld(limited)).toBe(0)
    expect((await limited(request(), ok)).status).toBe(200)
  })

  test('the limiter’s own 429 holds no slot: a request shaping refused after its slot was taken', async () => {
    // leaky-bucket: the second request would wait 5 s, beyond maxDelayMs 0, so it is refused
    // after the limiter admitted it (and gave it a slot).
    const limited = rateLimit({
      algorithm: 'leaky-bucket',
      limit: 2,
      window: '10s',
      maxDelayMs: 0,
      concurrency: 5,
      key,
    })
    const statuses: number[] = []
    for (let i = 0; i < 4; i++) {
      const response = await limited(request(), ok)
      await response.text()
      statuses.push(response.status)
      expect(await slotsHeld(limited, 5)).toBe(0)
    }
    expect(statuses).toEqual([200, 429, 429, 429])
  })

  test('skipSuccessfulRequests: the charge goes back once the body is sent; a client that left mid-stream counts as failed', async () => {
    const limited = rateLimit({
      limit: 1,
      window: '1m',
      concurrency: 5,
      skipSuccessfulRequests: true,
      key,
    })
    const body = controlledBody()
    const first = await limited(request(), () => new Response(body.stream))
    expect(first.status).toBe(200)
    // Still streaming: not over yet, so its charge is still counted.
    expect((await limited(request(), ok)).status).toBe(429)
    body.end()
    await first.text()
    await delay(5)
    const second = await limited(request(), ok)
    expect(second.status).toBe(200)
    await second.text()
    await delay(5)
    const left = controlledBody()
    const third = await limited(request(), () => new Response(left.stream))
    expect(third.status).toBe(200)
    await third.body!.cancel()
    await delay(5)
    expect((await limited(request(), ok)).status).toBe(429)
  })
})

describe('check() with concurrency', () => {
  test('rejects with a ConfigError naming the option, and takes no slot', async () => {
    const limited = rateLimit({ concurrency: 2, key })
    const checked = limited.check(request())
    await expect(checked).rejects.toThrow(ConfigError)
    await expect(checked).rejects.toThrow(
      /^`concurrency` \(2\) cannot be used with check\(\): .*Use limited\(request, handler\)/,
    )
    expect(await slotsHeld(limited, 2)).toBe(0)
    // The same limiter, through limited(request, handler), holds and gives back its slots.
    for (let i = 0; i < 4; i++) {
      const response = await limited(request(), ok)
      expect(response.status).toBe(200)
      await response.text()
    }
    expect(await slotsHeld(limited, 2)).toBe(0)
  })
})

describe('stacked limiters: a global one around a stricter route one', () => {
  const clock = () => 60_000 * 1000 + 40_000
  const common = { window: '1m', algorithm: 'fixed-window', clock, key } as const
  const headersOf = (response: Response) => ({
    status: response.status,
    limit: response.headers.get('x-ratelimit-limit'),
    remaining: response.headers.get('x-ratelimit-remaining'),
    reset: response.headers.get('x-ratelimit-reset'),
    retryAfter: response.headers.get('retry-after'),
    ratelimit: response.headers.get('ratelimit'),
    policy: response.headers.get('ratelimit-policy'),
  })

  test('the client gets the inner limiter’s headers, on its 200 and its 429 (as on Express)', async () => {
    const global = rateLimit({ ...common, limit: 100, standardHeaders: 'draft-7' })
    const login = rateLimit({ ...common, limit: 1, standardHeaders: 'draft-7' })
    const handle = (r: Request) => global(r, () => login(r, ok))
    const inner = { limit: '1', remaining: '0', reset: String(60_000 + 60), policy: '1;w=60' }
    expect(headersOf(await handle(request()))).toEqual({
      status: 200,
      ...inner,
      retryAfter: null,
      ratelimit: 'limit=1, remaining=0, reset=20',
    })
    expect(headersOf(await handle(request()))).toEqual({
      status: 429,
      ...inner,
      retryAfter: '20',
      ratelimit: 'limit=1, remaining=0, reset=20',
    })
    // The outer limiter still counted both, and writes its own where no inner one is.
    expect(headersOf(await global(request(), ok))).toMatchObject({
      status: 200,
      limit: '100',
      remaining: '97',
    })
  })

  test('a header the handler set itself is kept; the others are added', async () => {
    const limited = rateLimit({ ...common, limit: 5 })
    const response = await limited(request(), () =>
      Response.json({}, { headers: { 'X-RateLimit-Limit': 'upstream' } }),
    )
    expect(headersOf(response)).toMatchObject({ limit: 'upstream', remaining: '4' })
  })
})
