// examples/hono-basic, through app.request() and served by @hono/node-server on a real socket.
import { serve } from '@hono/node-server'
import type { AddressInfo } from 'node:net'
import type { Hono } from 'hono'

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { createApp } = require('../../../examples/hono-basic/app.js') as {
  createApp: (options?: object) => Hono
}

test('app.request(): 5 per 10 s per API token, then 429', async () => {
  const app = createApp()
  const ask = (token: string) => app.request('/', { headers: { 'x-api-key': token } })
  for (let remaining = 4; remaining >= 0; remaining--) {
    const res = await ask('demo')
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ hello: 'world', remaining })
  }
  const refused = await ask('demo')
  expect(refused.status).toBe(429)
  expect(refused.headers.get('x-ratelimit-remaining')).toBe('0')
  expect((await ask('other')).status).toBe(200)
})

test('over a real socket, requests without an issued key are keyed by the client address', async () => {
  const server = serve({ fetch: createApp({ limit: 2 }).fetch, port: 0, hostname: '127.0.0.1' })
  await new Promise<void>((resolve) => server.once('listening', () => resolve()))
  const { port } = server.address() as AddressInfo
  try {
    const statuses: number[] = []
    for (let i = 0; i < 3; i++) statuses.push((await fetch(`http://127.0.0.1:${port}/`)).status)
    expect(statuses).toEqual([200, 200, 429])
    // A made-up key is checked first: it falls back to the (limited) address, no fresh bucket.
    const madeUp = await fetch(`http://127.0.0.1:${port}/`, {
      headers: { 'x-api-key': 'forged-1' },
    })
    expect(madeUp.status).toBe(429)
  } finally {
    await new Promise((resolve) => server.close(resolve))
  }
})
