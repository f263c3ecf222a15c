// express-rate-limit stores work with the compatibility entry as they are, through a real server.
import { createHash } from 'node:crypto'
import { get } from 'node:http'
import type { AddressInfo } from 'node:net'
import express, { type Request } from 'express'
import { listen } from '@sluice/testkit'
import { MemoryStore, ConfigError } from '@sluice/core'
import {
  rateLimit,
  type ClientRateLimitInfo,
  type IncrementCallback,
  type LegacyStore,
  type Options,
  type Store,
} from '@sluice/express/compat'
import { fixedNow, serve } from './serve'

/** A store written to express-rate-limit's Store interface: one window per key from its first hit. */
class WindowStore implements Store {
  readonly calls: string[] = []
  options: Options | undefined
  private readonly hits = new Map<string, ClientRateLimitInfo>()

  init(options: Options): void {
    this.calls.push('init')
    this.options = options
  }

  increment(key: string): ClientRateLimitInfo {
    this.calls.push(`increment ${key}`)
    const now = Date.now()
    const live = this.hits.get(key)
    const info =
      live !== undefined && live.resetTime!.getTime() > now
        ? { totalHits: live.totalHits + 1, resetTime: live.resetTime }
        : { totalHits: 1, resetTime: new Date(now + this.options!.windowMs) }
    this.hits.set(key, info)
    return info
  }

  decrement(key: string): void {
    this.calls.push(`decrement ${key}`)
    const live = this.hits.get(key)
    if (live !== undefined) live.totalHits--
  }

  resetKey(key: string): void {
    this.calls.push(`resetKey ${key}`)
    this.hits.delete(key)
  }

  get(key: string): ClientRateLimitInfo | undefined {
    return this.hits.get(key)
  }
}

/** A pre-v6 store: `incr` with a callback, no reset time. */
class CallbackStore implements LegacyStore {
  readonly hits = new Map<string, number>()
  decrements = 0
  incr(key: string, callback: IncrementCallback): void {
    const count = (this.hits.get(key) ?? 0) + 1
    this.hits.set(key, count)
    callback(undefined, count, undefined)
  }
  decrement(key: string): void {
    this.decrements++
    this.hits.set(key, (this.hits.get(key) ?? 0) - 1)
  }
  resetKey(key: string): void {
    this.hits.delete(key)
  }
}

test('an express-rate-limit store counts every request and decides by its totalHits and resetTime', async () => {
  fixedNow(1_000_000)
  const store = new WindowStore()
  const { get } = await serve(rateLimit({ limit: 2, windowMs: 10_000, store }))
  await get().expect(200).expect('x-ratelimit-remaining', '1').expect('x-ratelimit-reset', '1010')
  await get().expect(200).expect('x-ratelimit-remaining', '0')
  await get().expect(429).expect('retry-after', '10')
  expect(store.calls).toEqual([
    'init',
    'increment 127.0.0.1',
    'increment 127.0.0.1',
    'increment 127.0.0.1',
  ])
})

test('store.init gets the resolved options, express-rate-limit defaults included', () => {
  const store = new WindowStore()
  rateLimit({ store, headers: false })
  expect(store.options).toMatchObject({
    limit: 5,
    windowMs: 60_000,
    legacyHeaders: false,
    headers: false,
  })
})

test('a pre-v6 store with incr(key, callback) works, its windows a whole window long', async () => {
  const store = new CallbackStore()
  const { get } = await serve(rateLimit({ limit: 1, store, skipFailedRequests: true }))
  await get().expect(200)
  await get().expect(429).expect('retry-after', '60')
  expect(store.hits.get('127.0.0.1')).toBe(1) // the rejected hit was counted, then given back
  expect(store.decrements).toBe(1)
})

test('skipSuccessfulRequests calls the store decrement after a successful response', async () => {
  const store = new WindowStore()
  const { get } = await serve(rateLimit({ limit: 1, store, skipSuccessfulRequests: true }))
  await get().expect(200)
  await get().expect(200)
  await get('/fail').expect(400)
  await get('/fail').expect(429)
  await new Promise((resolve) => setImmediate(resolve))
  expect(store.calls.filter((call) => call.startsWith('decrement'))).toEqual([
    'decrement 127.0.0.1',
    'decrement 127.0.0.1',
  ])
})

test('resetKey and getKey reach the store', async () => {
  const store = new WindowStore()
  const limiter = rateLimit({ limit: 1, store })
  const { get } = await serve(limiter)
  await get().expect(200)
  expect(await limiter.getKey('127.0.0.1')).toMatchObject({ totalHits: 1 })
  await get().expect(429)
  limiter.resetKey('127.0.0.1')
  expect(store.calls.at(-1)).toBe('resetKey 127.0.0.1')
  await get().expect(200)
})

test('resetKey and getKey work on the default store too', async () => {
  const limiter = rateLimit({ limit: 2 })
  const { get } = await serve(limiter)
  await get().expect(200)
  expect(await limiter.getKey('127.0.0.1')).toMatchObject({ totalHits: 1 })
  await get().expect(200)
  await get().expect(429)
  limiter.resetKey('127.0.0.1')
  await new Promise((resolve) => setImmediate(resolve))
  await get().expect(200)
})

test('a store that fails answers 500, or with passOnStoreError lets the request through and logs', async () => {
  const failing: Store = {
    increment: () => Promise.reject(new Error('store is down')),
    decrement: () => undefined,
    resetKey: () => undefined,
  }
  const warnings: unknown[] = []
  const quiet = { error: () => {}, warn: (message: unknown) => void warnings.push(message) }
  const strict = await serve(rateLimit({ store: failing, logger: quiet }))
  await strict.get().expect(500)
  expect(warnings).toEqual([
    "[sluice] PeerStore is failing (store call failed); answering with onStoreError 'throw' until it recovers",
  ])

  const errors: unknown[][] = []
  const logger = { error: (...args: unknown[]) => void errors.push(args), warn: () => {} }
  const lenient = await serve(rateLimit({ store: failing, passOnStoreError: true, logger }))
  const passed = await lenient.get().expect(200, 'ok')
  expect(passed.headers['x-ratelimit-limit']).toBeUndefined()
  expect(errors).toHaveLength(1)
  expect(errors[0][0]).toEqual(new Error('store is down'))
  expect(errors[0][1]).toBe(
    'express-rate-limit: error from store, allowing request without rate-limiting.',
  )
})

test('a store init that throws or rejects is logged, not thrown', async () => {
  const errors: unknown[][] = []
  const logger = { error: (...args: unknown[]) => void errors.push(args), warn: () => {} }
  const throwing = Object.assign(new WindowStore(), {
    init: () => {
      throw new Error('no init')
    },
  })
  const rejecting = Object.assign(new WindowStore(), {
    init: () => Promise.reject(new Error('late init')),
  })
  rateLimit({ store: throwing, logger })
  rateLimit({ store: rejecting, logger })
  await new Promise((resolve) => setImmediate(resolve))
  expect(errors).toEqual([
    [new Error('no init'), 'express-rate-limit: error during store initialization.'],
    [new Error('late init'), 'express-rate-limit: async error during store initialization.'],
  ])
})

test('an object that is no store is a ConfigError naming `store`', () => {
  const invalid = { invalid: true } as unknown as Store
  expect(() => rateLimit({ store: invalid })).toThrow(ConfigError)
  expect(() => rateLimit({ store: invalid })).toThrow(/^`store` must be a store with increment/)
  const badInit = {
    ...new WindowStore(),
    increment: () => ({ totalHits: 1, resetTime: undefined }),
    decrement() {},
    resetKey() {},
    init: 'no',
  }
  expect(() => rateLimit({ store: badInit as unknown as Store })).toThrow(/^`store` must be/)
})

test('a Sluice Store is used as it is, with per-key windows', async () => {
  fixedNow(1_000_500)
  const store = new MemoryStore()
  const { get } = await serve(
    rateLimit({ limit: 1, store, keyGenerator: (req: Request) => String(req.query.k) }),
  )
  await get('/?k=a').expect(200).expect('x-ratelimit-reset', '1061')
  await get('/?k=a').expect(429)
  await get('/?k=b').expect(200)
})

test('skipFailedRequests gives back the hit of a client that left while the store was counting', async () => {
  let release: () => void = () => {}
  let counting: () => void = () => {}
  const counted = new Promise<void>((resolve) => (counting = resolve))
  const decrements: string[] = []
  const slow: Store = {
    increment: () => {
      counting()
      return new Promise((resolve) => {
        release = () => resolve({ totalHits: 1, resetTime: undefined })
      })
    },
    decrement: (key) => {
      decrements.push(key)
      decremented()
    },
    resetKey: () => undefined,
  }
  let decremented: () => void = () => {}
  const givenBack = new Promise<void>((resolve) => (decremented = resolve))
  let closed: () => void = () => {}
  const serverSawClose = new Promise<void>((resolve) => (closed = resolve))
  const app = express()
  app.use((_req, res, next) => {
    res.once('close', () => closed())
    next()
  })
  app.use(rateLimit({ store: slow, skipFailedRequests: true }))
  app.get('/slow', (_req, res) => void res.send('late'))
  const served = await listen(app)
  try {
    const { port } = served.server.address() as AddressInfo
    const client = get(`http://127.0.0.1:${port}/slow`)
    client.on('error', () => {}) // the abort below
    await counted
    client.destroy()
    await serverSawClose
    release()
    // Waits for the decrement, or gives up after 2 s (it never comes when the close was missed).
    await Promise.race([givenBack, new Promise((resolve) => setTimeout(resolve, 2000))])
    expect(decrements).toEqual(['127.0.0.1'])
  } finally {
    await served.close()
  }
})

test("getKey and resetKey with a limit function and Sluice's store throw, naming what they need", () => {
  const limiter = rateLimit({ limit: () => 3 })
  const needs = /needs a fixed `limit` or an express-rate-limit store/
  expect(() => limiter.getKey('k')).toThrow(needs)
  expect(() => limiter.resetKey('k')).toThrow(needs)
})

test('a key longer than 256 bytes reaches the store hashed', async () => {
  const store = new WindowStore()
  const long = 'k'.repeat(300)
  const { get } = await serve(rateLimit({ store, keyGenerator: () => long }))
  await get().expect(200)
  const hashed = `sha256:${createHash('sha256').update(long).digest('base64url')}`
  expect(store.calls).toEqual(['init', `increment ${hashed}`])
})
