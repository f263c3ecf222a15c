import { createServer, get as httpGet, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import express from 'express'
import { Cluster, Redis } from 'ioredis'
import { concurrencySlotKey, createLimiter, type Limiter } from '@sluice/core'
import { rateLimit } from '@sluice/express'
import { RedisStore } from '@sluice/redis'
import {
  startRedis,
  startRedisCluster,
  type RedisClusterHandle,
  type RedisServer,
} from '@sluice/testkit'
import { forkWorker, nextMessage, running, type Worker } from './workers'
import { gateOf } from '../../core/src/concurrency/limiter'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

let server: RedisServer
let cluster: RedisClusterHandle
let standalone: Redis
let clustered: Cluster
const workers: Worker<Record<string, number>>[] = []

beforeAll(async () => {
  ;[server, cluster] = await Promise.all([startRedis(), startRedisCluster()])
  standalone = new Redis({ port: server.port, host: '127.0.0.1', maxRetriesPerRequest: 1 })
  clustered = new Cluster(cluster.nodes, { redisOptions: { maxRetriesPerRequest: 1 } })
}, 60_000)

afterAll(async () => {
  for (const worker of workers) if (running(worker)) worker.child.kill('SIGKILL')
  standalone?.disconnect()
  clustered?.disconnect()
  await Promise.all([server?.stop(), cluster?.stop()])
})

/** Slots of `key` taken now under a concurrency limit of `limit`, as the store counts them. */
function taken(limiter: Limiter, key: string, limit: number): Promise<number> {
  return (limiter.store as RedisStore).slots.count(concurrencySlotKey(key, limit), Date.now())
}

describe.each([
  ['standalone', () => standalone],
  ['Cluster', () => clustered],
] as const)('RedisStore slots (%s)', (_name, client) => {
  test('admits N at once, all or nothing with a rate limit, releases exactly once', async () => {
    const store = new RedisStore({ client: client(), blockCache: false })
    const key = `c:${Date.now()}:${Math.random()}`
    const limiter = createLimiter({ limit: 4, window: '1h', concurrency: 3, store })
    const held = [
      await limiter.consume(key),
      await limiter.consume(key),
      await limiter.consume(key),
    ]
    expect(held.map((d) => [d.allowed, d.remaining])).toEqual([
      [true, 2],
      [true, 1],
      [true, 0],
    ])
    // No slot: refused, and the rate limit is not charged.
    const refused = await limiter.consume(key)
    expect([refused.allowed, refused.policy.name]).toEqual([false, '3-concurrent'])
    expect((await limiter.peek(key)).remaining).toBe(1)
    await held[0].slot!.release()
    await held[0].slot!.release() // twice: nothing more
    expect(gateOf(limiter)!.ignoredReleases).toBe(1)
    expect(await taken(limiter, key, 3)).toBe(2)
    // A slot, but the rate limit refuses the fifth overall: the slot goes back at once.
    const fourth = await limiter.consume(key) // the 4th of the rate limit
    expect(fourth.allowed).toBe(true)
    await held[1].slot!.release()
    const overRate = await limiter.consume(key)
    expect([overRate.allowed, overRate.policy.name]).toEqual([false, '4-per-1h'])
    expect(await taken(limiter, key, 3)).toBe(2)
    // The rest given back: no lease is renewed after the test.
    await Promise.all([held[2].slot!.release(), fourth.slot!.release()])
    expect(await taken(limiter, key, 3)).toBe(0)
  })
})

describe('across processes: 4 Express servers on one Redis, one key, N = 5', () => {
  const key = `mp:${Date.now()}`
  const counter = `${key}:in-flight`
  const servers: Worker<Record<string, number>>[] = []
  let ports: number[] = []

  beforeAll(async () => {
    const script = join(__dirname, 'fixtures', 'slot-server.js')
    for (let i = 0; i < 4; i++) {
      servers.push(forkWorker(script, [String(server.port), key, '5', counter]))
    }
    workers.push(...servers)
    ports = await Promise.all(servers.map(async (w) => (await nextMessage(w)).port))
  }, 120_000) // four processes compiling the sources at once

  const get = (port: number, path = '/') =>
    new Promise<{ status: number; inFlight?: number }>((resolve, reject) => {
      httpGet({ host: '127.0.0.1', port, path }, (res) => {
        let body = ''
        res.on('data', (chunk: string) => (body += chunk))
        res.on('end', () => resolve({ status: res.statusCode!, ...(JSON.parse(body) as object) }))
      }).on('error', reject)
    })

  test('never more than 5 in flight, as the handlers measure it', async () => {
    // 30 requests at once to each process, twice over.
    const results = []
    for (let round = 0; round < 2; round++) {
      const all = ports.flatMap((port) => Array.from({ length: 30 }, () => get(port)))
      results.push(...(await Promise.all(all)))
    }
    const admitted = results.filter((r) => r.status === 200)
    const refused = results.filter((r) => r.status === 429)
    expect(Math.max(...admitted.map((r) => r.inFlight!))).toBeLessThanOrEqual(5)
    expect(admitted.length).toBeGreaterThanOrEqual(5)
    expect(refused.length).toBeGreaterThan(0)
    expect(admitted.length + refused.length).toBe(240)
    await sleep(50)
    const slots = new RedisStore({ client: standalone }).slots
    expect(await slots.count(concurrencySlotKey(key, 5), Date.now())).toBe(0) // every slot back
  })

  test('a process killed with SIGKILL while holding slots gives them back within leaseMs', async () => {
    const leaseMs = 1500
    const held = `kill:${Date.now()}`
    const slots = new RedisStore({ client: standalone }).slots
    for (let i = 0; i < 3; i++) {
      httpGet({ host: '127.0.0.1', port: ports[0], path: `/hold?k=${held}` }).on('error', () => {})
    }
    while ((await slots.count(concurrencySlotKey(held, 5), Date.now())) < 3) await sleep(10)
    await sleep(leaseMs) // renewed meanwhile: still held
    expect(await slots.count(concurrencySlotKey(held, 5), Date.now())).toBe(3)
    servers[0].child.kill('SIGKILL')
    const killed = performance.now()
    let back = -1
    while (performance.now() - killed < 2 * leaseMs) {
      if ((await slots.count(concurrencySlotKey(held, 5), Date.now())) === 0) {
        back = performance.now() - killed
        break
      }
      await sleep(20)
    }
    expect(back).toBeGreaterThanOrEqual(0)
    expect(back).toBeLessThanOrEqual(leaseMs + 50)
    // The other processes admit on that key again.
    expect((await get(ports[1], `/?k=${held}`)).status).toBe(200)
  }, 15_000)

  afterAll(() => {
    for (const worker of servers) if (running(worker)) worker.child.kill('SIGKILL')
  })
})

test('a client that disconnects mid-request frees its slot at once; the handler still runs', async () => {
  const key = `gone:${Date.now()}`
  const store = new RedisStore({ client: standalone, blockCache: false })
  const app = express()
  const middleware = rateLimit({ concurrency: 1, store, key: () => key })
  let entered!: () => void
  const inHandler = new Promise<void>((resolve) => (entered = resolve))
  let finish!: () => void
  const handlerDone = new Promise<void>((resolve) => (finish = resolve))
  app.use(middleware)
  app.get('/', (_req, res) => {
    entered()
    void handlerDone.then(() => res.end('late'))
  })
  const http: Server = createServer(app)
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve))
  const port = (http.address() as AddressInfo).port
  const abandoned = httpGet({ host: '127.0.0.1', port, path: '/' })
  abandoned.on('error', () => {})
  await inHandler
  const slots = store.slots
  expect(await slots.count(concurrencySlotKey(key, 1), Date.now())).toBe(1)
  abandoned.destroy()
  let freed = false
  for (let i = 0; i < 50 && !freed; i++) {
    await sleep(5)
    freed = (await slots.count(concurrencySlotKey(key, 1), Date.now())) === 0
  }
  expect(freed).toBe(true) // long before the handler ends
  finish()
  http.closeAllConnections()
  await new Promise((resolve) => http.close(resolve))
})

test('a store hang answers by onStoreError and leaks no slot', async () => {
  const paused = await startRedis()
  const client = new Redis({ port: paused.port, host: '127.0.0.1', maxRetriesPerRequest: 1 })
  try {
    const store = new RedisStore({ client, blockCache: false })
    const warnings: string[] = []
    const limiter = createLimiter({
      concurrency: { concurrency: 2, leaseMs: 30_000 },
      store,
      timeoutMs: 100,
      onStoreError: 'allow',
      logger: { warn: (m) => void warnings.push(m) },
    })
    await store.slots.count('warm', Date.now()) // connected, scripts aside
    paused.pause()
    const answered = await limiter.consume('k')
    expect([answered.allowed, answered.degraded, answered.slot]).toEqual([true, true, undefined])
    paused.resume()
    // The stalled acquire runs once Redis resumes; its grant comes back late and is released.
    let left = -1
    for (let i = 0; i < 100; i++) {
      await sleep(20)
      left = await store.slots.count(concurrencySlotKey('k', 2), Date.now())
      if (left === 0 && gateOf(limiter)!.held === 0) break
    }
    expect(left).toBe(0)
    expect(gateOf(limiter)!.held).toBe(0)
    expect(warnings.some((w) => w.includes('is failing'))).toBe(true)
  } finally {
    client.disconnect()
    await paused.stop()
  }
}, 15_000)
