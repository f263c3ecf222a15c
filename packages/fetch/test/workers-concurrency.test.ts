import { join } from 'node:path'
import { bundleWorker } from '@sluice/testkit'
import { Miniflare } from 'miniflare'

// `concurrency` in real workerd (Miniflare), through @sluice/fetch and @sluice/hono: a streamed
// body holds the slot until workerd has sent it. A client leaving mid-stream is covered in
// concurrency.test.ts: Miniflare's proxy passes no disconnect on to the Worker (neither a
// cancelled body nor a destroyed socket reaches the stream's cancel), so it cannot be seen here.

let mf: Miniflare

beforeAll(async () => {
  const script = await bundleWorker(join(__dirname, 'fixtures/streaming-worker.ts'))
  mf = new Miniflare({ modules: true, script, compatibilityDate: '2025-04-01' })
  await mf.ready
})

afterAll(async () => {
  await mf?.dispose()
})

// `identity`: workerd gzips for a client that accepts it, and its compressor holds a streamed
// body's chunks until the end, so the test could not read the first chunk while the rest waits.
const get = (path: string, ip: string) =>
  mf.dispatchFetch(`https://example.test${path}`, {
    headers: { 'cf-connecting-ip': ip, 'accept-encoding': 'identity' },
  })

/** The status of a `quick` request of `ip`, its body read. */
async function quick(adapter: string, ip: string): Promise<number> {
  const response = await get(`/${adapter}/quick`, ip)
  await response.text()
  return response.status
}

describe.each(['fetch', 'hono'])('@sluice/%s in workerd, concurrency: 1', (adapter) => {
  test('a streamed body holds the slot until it has been sent', async () => {
    const ip = '203.0.113.7'
    const first = await get(`/${adapter}/stream?ms=1500`, ip)
    expect(first.status).toBe(200)
    const reader = first.body!.getReader()
    const text = new TextDecoder()
    expect(text.decode((await reader.read()).value)).toBe('a')
    expect(await quick(adapter, ip)).toBe(429)
    let rest = ''
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      rest += text.decode(chunk.value)
    }
    expect(rest).toBe('b')
    expect(await quick(adapter, ip)).toBe(200)
  })
})
