import { setTimeout as delay } from 'node:timers/promises'
import { fork } from 'node:child_process'
import { connect, createServer, type Server as NetServer, type Socket } from 'node:net'
import { join } from 'node:path'
import {
  ConfigError,
  StoreError,
  createLimiter,
  type AlgorithmName,
  type Decision,
} from '@sluice/core'
import { resolvePolicy } from '@sluice/core/adapter'
import { MemcachedStore } from '@sluice/memcached'
import { startMemcached, watchStalls, type MemcachedServer } from '@sluice/testkit'
import { Client } from 'memjs'

let server: MemcachedServer
/** A client of the test's own, to look at what the store wrote. */
let inspector: Client
let keys = 0

interface Tally {
  admitted: number
  rejected: number
  failed: number
}
const freshKey = (): string => `t${process.pid}:${Date.now().toString(36)}:${keys++}`

beforeAll(async () => {
  server = await startMemcached()
  inspector = Client.create(server.servers, { retries: 0, logger: { log: () => undefined } })
})

afterAll(async () => {
  inspector?.close()
  await server?.stop()
})

/** `mg <key> t v` over the text protocol: the item's value and its remaining TTL in seconds. */
function metaGet(name: string): Promise<{ value: string; ttl: number } | undefined> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: server.host, port: server.port })
    let data = ''
    socket.on('error', reject)
    socket.on('data', (chunk) => {
      data += chunk.toString('utf8')
      if (data.startsWith('EN\r\n')) {
        socket.destroy()
        resolve(undefined)
        return
      }
      const match = /^VA \d+ t(-?\d+)\r\n(.*)\r\n/.exec(data)
      if (!match) return
      socket.destroy()
      resolve({ ttl: Number(match[1]), value: match[2] })
    })
    socket.write(`mg ${name} t v\r\n`)
  })
}

function policy(algorithm: AlgorithmName, limit: number, window: number, precision?: number) {
  return resolvePolicy({ algorithm, limit, window, precision })
}

describe('set-up', () => {
  test('sliding-log is refused when the limiter is created, naming the algorithm and the store', async () => {
    const store = new MemcachedStore({ servers: server.servers })
    expect(() =>
      createLimiter({ algorithm: 'sliding-log', limit: 5, window: '1m', store }),
    ).toThrow(ConfigError)
    expect(() =>
      createLimiter({ algorithm: 'sliding-log', limit: 5, window: '1m', store }),
    ).toThrow(/MemcachedStore supports; got "sliding-log"/)
    // Called directly, the store refuses it too (nothing is written).
    const policies = [policy('sliding-log', 5, 60_000)]
    await expect(store.consume({ key: 'k', policies, cost: 1, now: 1 })).rejects.toThrow(
      /MemcachedStore does not support the 'sliding-log' algorithm/,
    )
    await store.close()
  })

  test('options are checked at creation, naming the option', () => {
    const make = (options: unknown) => () =>
      new MemcachedStore(options as ConstructorParameters<typeof MemcachedStore>[0])
    expect(make({})).toThrow(/exactly one of `client`.*or `servers`/)
    expect(make({ servers: server.servers, client: inspector })).toThrow(/exactly one/)
    expect(make({ servers: '' })).toThrow(/`servers` must be/)
    expect(make({ client: {} })).toThrow(/`client` must be a memjs Client/)
    expect(make({ servers: server.servers, casAttempts: 0 })).toThrow(/`casAttempts` must be/)
    expect(make({ servers: server.servers, prefix: 7 })).toThrow(/`prefix` must be a string/)
    expect(make({ servers: server.servers, casAttempt: 3 })).toThrow(
      new ConfigError('unknown option `casAttempt` for MemcachedStore (value 3)'),
    )
  })

  test('works on a memjs client passed in, under its prefix, and leaves that client open', async () => {
    const store = new MemcachedStore({ client: inspector, prefix: 'app' })
    const key = freshKey()
    const policies = [policy('fixed-window', 3, 60_000)]
    await store.consume({ key, policies, cost: 2, now: 120_500 })
    const item = await inspector.get(`app:${policies[0].id}|${key}:2`)
    expect(item.value?.toString()).toBe('2')
    await store.close()
    expect((await inspector.get(`app:${policies[0].id}|${key}:2`)).value?.toString()).toBe('2')
  })
})

describe('counters as in the seeds', () => {
  test('sliding-window keeps one counter per bucket with a TTL of two windows', async () => {
    const store = new MemcachedStore({ client: inspector })
    const key = freshKey()
    const sw = policy('sliding-window', 7, 60_000)
    const base = `sluice:${sw.id}|${key}`
    await store.consume({ key, policies: [sw], cost: 5, now: 600_000 + 1000 })
    await store.consume({ key, policies: [sw], cost: 3, now: 660_000 + 1000 })
    const previous = await metaGet(`${base}:10`)
    const current = await metaGet(`${base}:11`)
    expect(previous?.value).toBe('5')
    expect(current?.value).toBe('3')
    // 2 x 60 s, plus the second of slack for memcached's whole-second clock.
    expect(current?.ttl).toBeGreaterThanOrEqual(119)
    expect(current?.ttl).toBeLessThanOrEqual(121)
    // Weighted as the seeds weigh it: 3 + 5 x 0.7 = 6.5 -> 6 used, one more passes.
    const look = await store.peek({ key, policies: [sw], cost: 0, now: 660_000 + 18_000 })
    expect(look.outcomes[0].remaining).toBe(1)
  })

  test('precision N reads N + 1 buckets', async () => {
    const store = new MemcachedStore({ client: inspector })
    const key = freshKey()
    const sw = policy('sliding-window', 10, 4000, 4) // four buckets of 1000 ms
    for (let t = 0; t < 5; t++)
      await store.consume({ key, policies: [sw], cost: 2, now: t * 1000 + 500 })
    for (let b = 0; b < 5; b++) {
      expect((await metaGet(`sluice:${sw.id}|${key}:${b}`))?.value).toBe('2')
    }
    // At 4500: buckets 1-4 in full (8) and bucket 0 weighted by half (1) -> 9 used.
    const look = await store.peek({ key, policies: [sw], cost: 0, now: 4500 })
    expect(look.outcomes[0].remaining).toBe(1)
  })

  test('a very long key is hashed under the 250-byte limit of memcached keys', async () => {
    const store = new MemcachedStore({ client: inspector })
    const key = 'x'.repeat(400)
    const policies = [policy('fixed-window', 2, 1000), policy('token-bucket', 2, 1000)]
    await store.reset(key, policies)
    const d = await store.consume({ key, policies, cost: 1, now: 5000 })
    expect(d.outcomes.map((o) => o.allowed)).toEqual([true, true])
    const again = await store.consume({ key, policies, cost: 1, now: 5000 })
    expect(again.outcomes.map((o) => o.remaining)).toEqual([0, 0])
  })
})

describe('concurrency', () => {
  const windowed: AlgorithmName[] = ['fixed-window', 'sliding-window']
  test.each(windowed)(
    '%s: concurrent increments past the limit are rolled back, the total stays at the limit',
    async (algorithm) => {
      const store = new MemcachedStore({ servers: server.servers })
      const key = freshKey()
      const policies = [policy(algorithm, 10, 60_000)]
      const now = 1_200_000
      // All 50 reads go out before any increment: each sees an empty bucket and increments.
      const results = await Promise.all(
        Array.from({ length: 50 }, () => store.consume({ key, policies, cost: 1, now })),
      )
      expect(results.filter((r) => r.outcomes[0].allowed)).toHaveLength(10)
      // The 40 rolled back left nothing behind.
      expect((await metaGet(`sluice:${policies[0].id}|${key}:20`))?.value).toBe('10')
      const look = await store.peek({ key, policies, cost: 0, now })
      expect(look.outcomes[0]).toMatchObject({ allowed: true, remaining: 0 })
      await store.close()
    },
  )

  test('several limits: a counter that loses a race gives back every other limit', async () => {
    const store = new MemcachedStore({ servers: server.servers })
    const key = freshKey()
    const policies = [policy('fixed-window', 5, 60_000), policy('token-bucket', 100, 60_000)]
    const now = 3_000_000
    const results = await Promise.all(
      Array.from({ length: 20 }, () => store.consume({ key, policies, cost: 1, now })),
    )
    const admitted = results.filter((r) => r.outcomes.every((o) => o.allowed)).length
    expect(admitted).toBe(5)
    const look = await store.peek({ key, policies, cost: 0, now })
    // The token bucket counted only the admitted five, not the 15 rolled back.
    expect(look.outcomes.map((o) => o.remaining)).toEqual([0, 95])
    await store.close()
  })

  test('meters: requests in flight together in one process queue up instead of racing', async () => {
    const store = new MemcachedStore({ servers: server.servers, casAttempts: 1 })
    const key = freshKey()
    const policies = [policy('gcra', 100, 60_000)]
    const results = await Promise.all(
      Array.from({ length: 50 }, () => store.consume({ key, policies, cost: 1, now: 9_000 })),
    )
    expect(results.filter((r) => r.outcomes[0].allowed)).toHaveLength(50)
    const look = await store.peek({ key, policies, cost: 0, now: 9_000 })
    expect(look.outcomes[0].remaining).toBe(50)
    await store.close()
  })

  test('CAS contention past casAttempts is a StoreError, which onStoreError answers', async () => {
    // Separate stores (separate connections) race as separate processes would.
    const stores = Array.from(
      { length: 8 },
      () => new MemcachedStore({ servers: server.servers, casAttempts: 1 }),
    )
    const key = freshKey()
    const policies = [policy('token-bucket', 5, 60_000)]
    const settled = await Promise.allSettled(
      stores.flatMap((store) =>
        Array.from({ length: 3 }, () => store.consume({ key, policies, cost: 1, now: 7_000 })),
      ),
    )
    const failures = settled.flatMap((s) => (s.status === 'rejected' ? [s.reason as unknown] : []))
    expect(failures.length).toBeGreaterThan(0)
    expect(failures[0]).toBeInstanceOf(StoreError)
    expect(String(failures[0])).toMatch(/compare-and-swap attempts/)
    const admitted = settled.filter((s) => s.status === 'fulfilled' && s.value.outcomes[0].allowed)
    expect(admitted.length).toBeLessThanOrEqual(5)

    const limiters = stores.map((store) =>
      createLimiter({
        algorithm: 'token-bucket',
        limit: 5,
        window: '1m',
        store,
        onStoreError: 'deny',
      }),
    )
    const other = freshKey()
    const decisions = await Promise.all(limiters.map((limiter) => limiter.consume(other)))
    expect(decisions.some((d) => d.degraded && !d.allowed)).toBe(true)
    await Promise.all(stores.map((store) => store.close()))
  })

  test('4 OS processes hammering one key admit no more than the limit (fixed-window, sliding-window)', async () => {
    const limit = 150
    const jobs = windowed.map((algorithm) => ({
      servers: server.servers,
      key: freshKey(),
      algorithm,
      limit,
      now: 7_200_000 + 123,
      requests: 200,
      inFlight: 20,
    }))
    const children = Array.from({ length: 4 }, () =>
      fork(join(__dirname, 'fixtures/hammer.ts'), [JSON.stringify(jobs)], {
        // One start-up (ts-node) per child for both algorithms keeps the test short.
        execArgv: ['-r', 'ts-node/register/transpile-only'],
        cwd: join(__dirname, '../../..'),
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      }),
    )
    const ready = children.map(
      (child) => new Promise<void>((resolve) => child.once('message', () => resolve())),
    )
    await Promise.all(ready)
    const reports = children.map(
      (child) =>
        new Promise<Tally[]>((resolve, reject) => {
          child.once('message', (message) => resolve(message as Tally[]))
          child.once('exit', (code) => reject(new Error(`child exited with ${code}`)))
        }),
    )
    for (const child of children) child.send('go')
    const perChild = await Promise.all(reports)
    for (const [index, job] of jobs.entries()) {
      const totals = perChild.reduce(
        (sum, tallies) => ({
          admitted: sum.admitted + tallies[index].admitted,
          rejected: sum.rejected + tallies[index].rejected,
          failed: sum.failed + tallies[index].failed,
        }),
        { admitted: 0, rejected: 0, failed: 0 },
      )
      expect({ algorithm: job.algorithm, failed: totals.failed }).toEqual({
        algorithm: job.algorithm,
        failed: 0,
      })
      expect(totals.admitted + totals.rejected).toBe(800)
      // The guarantee: never more than the limit. A rollback may reject a request that would
      // have fitted while a losing increment was still counted, so only most of it is used.
      expect(totals.admitted).toBeLessThanOrEqual(limit)
      expect(totals.admitted).toBeGreaterThanOrEqual(limit - 20)
      // Every rolled-back increment was taken back: the bucket holds exactly the admitted.
      const id = policy(job.algorithm, limit, 3_600_000).id
      const stored = await metaGet(`sluice:${id}|${job.key}:2`)
      expect(Number(stored?.value)).toBe(totals.admitted)
    }
    // Four children compile the sources at start-up: 4 s alone, past 20 s in the full run.
  }, 60_000)
})

test('a block for good, and windows of centuries, expire in 2038 at the latest instead of failing', async () => {
  const store = new MemcachedStore({ servers: server.servers })
  const key = freshKey()
  const limiter = createLimiter({ limit: 5, window: '1m', store })
  await limiter.block(key, Number.MAX_SAFE_INTEGER)
  expect(await limiter.consume(key)).toMatchObject({ allowed: false, degraded: false })
  const ages = createLimiter({ limit: 5, window: 5e12, algorithm: 'fixed-window', store })
  const other = freshKey()
  expect(await ages.consume(other)).toMatchObject({ allowed: true, degraded: false, remaining: 4 })
  expect(await ages.consume(other)).toMatchObject({ allowed: true, degraded: false, remaining: 3 })
  await store.close()
})

describe('failures', () => {
  async function consumeAll(limiter: ReturnType<typeof createLimiter>, key: string, n: number) {
    return Promise.allSettled(Array.from({ length: n }, () => limiter.consume(key)))
  }

  test('memcached killed mid-traffic: onStoreError answers, nothing hangs, then it recovers', async () => {
    const own = await startMemcached()
    const store = new MemcachedStore({ servers: own.servers })
    const key = freshKey()
    // A short cool-off: the breaker's probe finds memcached back soon after the restart.
    const breaker = { failures: 5, coolOffMs: 50 }
    const make = (onStoreError: 'throw' | 'allow' | 'deny') =>
      createLimiter({ limit: 1000, window: '1m', store, onStoreError, timeoutMs: 2000, breaker })
    const strict = make('throw')
    const open = make('allow')
    const closed = make('deny')
    try {
      expect((await strict.consume(key)).allowed).toBe(true)

      // Kill while a burst is in flight: every call settles, as a decision or a StoreError.
      const inFlight = consumeAll(strict, key, 50)
      await own.kill()
      const downStalls = watchStalls()
      const started = Date.now()
      const settled = await inFlight
      for (const result of settled) {
        if (result.status === 'rejected') expect(result.reason).toBeInstanceOf(StoreError)
      }

      // Down: answered at once (connection refused), well within timeoutMs.
      await expect(strict.consume(key)).rejects.toBeInstanceOf(StoreError)
      const allowed = await open.consume(key)
      expect(allowed).toMatchObject({ allowed: true, degraded: true })
      const denied = await closed.consume(key)
      expect(denied).toMatchObject({ allowed: false, degraded: true, retryAfterMs: 1000 })
      const fallback = createLimiter({
        limit: 1,
        window: '1m',
        store,
        breaker,
        onStoreError: createLimiter({ limit: 1, window: '1m' }),
      })
      expect(await fallback.consume(key)).toMatchObject({ allowed: true, degraded: true })
      expect(await fallback.consume(key)).toMatchObject({ allowed: false, degraded: true })
      expect(Date.now() - started).toBeLessThan(1500 + downStalls.stop())

      // Back (empty: memcached keeps nothing across a restart): decisions from the store again.
      await own.restart()
      await delay(60)
      const back: Decision = await strict.consume(key)
      expect(back).toMatchObject({ allowed: true, degraded: false, remaining: 999 })
    } finally {
      await store.close()
      await own.stop()
    }
  })

  test('a server that accepts but never answers: timeoutMs bounds the call', async () => {
    const sockets = new Set<Socket>()
    const silent: NetServer = createServer((socket) => {
      sockets.add(socket)
      socket.on('error', () => undefined)
    })
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    const address = silent.address()
    const port = typeof address === 'object' && address !== null ? address.port : 0
    const store = new MemcachedStore({ servers: `127.0.0.1:${port}` })
    const limiter = createLimiter({
      limit: 5,
      window: '1m',
      store,
      onStoreError: 'deny',
      timeoutMs: 100,
    })
    try {
      const stalls = watchStalls()
      const started = Date.now()
      const decision = await limiter.consume('k')
      const elapsed = Date.now() - started
      expect(decision).toMatchObject({ allowed: false, degraded: true })
      expect(elapsed).toBeLessThan(400 + stalls.stop())
      const strict = createLimiter({ limit: 5, window: '1m', store, timeoutMs: 100 })
      await expect(strict.consume('k')).rejects.toMatchObject({ code: 'ERR_SLUICE_STORE_TIMEOUT' })
    } finally {
      await store.close()
      for (const socket of sockets) socket.destroy()
      await new Promise((resolve) => silent.close(resolve))
    }
  })
})
