import { join } from 'node:path'
import { bundleWorker } from '@sluice/testkit'
import { Miniflare } from 'miniflare'

// Regressions on Workers, in real workerd (Miniflare). The fixture's Durable Object decides each
// consume at once and replies 250 ms later; the limiters' timeoutMs is 50, onStoreError 'allow'.
// - A reply after timeoutMs was cut off with its request (workerd cancels I/O still pending
//   once the response is returned), so the refund of its charge never ran and the object kept
//   it: the request's ExecutionContext (`limited(request, handler, ctx)`, Hono's
//   `c.executionCtx`) now keeps both running (ctx.waitUntil).
// - workerd also ends a request's timers with it: the one deadline timer shared by every call
//   died with the first request answered in time, and no call of the isolate timed out again.

let mf: Miniflare

beforeAll(async () => {
  const script = await bundleWorker(join(__dirname, 'fixtures/late-reply-worker.ts'))
  mf = new Miniflare({
    modules: true,
    script,
    compatibilityDate: '2025-04-01',
    durableObjects: { LATE: 'LateLimiterObject', FAST: 'SluiceLimiterObject' },
  })
  await mf.ready
})

afterAll(async () => {
  await mf?.dispose()
})

/** A request of `ip` to `path`: its status and body. */
async function send(path: string, ip: string): Promise<string> {
  const response = await mf.dispatchFetch(`https://w.test${path}`, {
    headers: { 'cf-connecting-ip': ip },
  })
  return `${response.status} ${await response.text()}`
}

/** Three requests of `ip` to `path`, one after another. */
async function three(path: string, ip: string): Promise<string[]> {
  const bodies: string[] = []
  for (let i = 0; i < 3; i++) bodies.push(await send(path, ip))
  return bodies
}

/** What is left of the limit of 5 for `ip`, read once the late replies have come (250 ms). */
async function remaining(ip: string): Promise<number> {
  const peek = await mf.dispatchFetch(`https://w.test/peek?ip=${ip}`)
  return ((await peek.json()) as { remaining: number }).remaining
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 800))

const DEGRADED = Array(3).fill('200 degraded=true')

test('a call answered in time leaves timeoutMs working for the next request', async () => {
  expect(await send('/fast', '198.51.100.1')).toBe('200 degraded=false')
  // Answered at its timeoutMs by onStoreError, not 250 ms later by the store.
  expect(await send('/fetch', '198.51.100.2')).toBe('200 degraded=true')
  await settle()
})

test('with ctx, late replies are refunded: @sluice/fetch and @sluice/hono leave the whole limit', async () => {
  const [viaFetch, viaHono] = await Promise.all([
    three('/fetch?ctx=1', '203.0.113.10'),
    three('/hono?ctx=1', '203.0.113.11'),
  ])
  // Each request was answered without the store (onStoreError 'allow'), so none is charged.
  expect([viaFetch, viaHono]).toEqual([DEGRADED, DEGRADED])
  await settle()
  expect([await remaining('203.0.113.10'), await remaining('203.0.113.11')]).toEqual([5, 5])
})

test('without ctx, workerd cuts the late replies off and the object keeps their charges', async () => {
  // The control: what ctx is for, and proof that the replies above came after the response.
  const [viaFetch, viaHono] = await Promise.all([
    three('/fetch', '203.0.113.20'),
    three('/hono', '203.0.113.21'),
  ])
  expect([viaFetch, viaHono]).toEqual([DEGRADED, DEGRADED])
  await settle()
  expect([await remaining('203.0.113.20'), await remaining('203.0.113.21')]).toEqual([2, 2])
})
