import { once } from 'node:events'
import { setTimeout as delay } from 'node:timers/promises'
import { createLimiter, StoreError, type Decision, type Limiter } from '@sluice/core'
import { RedisStore, type RedisClientLike } from '@sluice/redis'
import {
  REDIS_LIBRARIES,
  startRedis,
  storeSettled,
  watchStalls,
  type RedisLibrary,
  type RedisServer,
} from '@sluice/testkit'
import { Redis as Valkey } from 'iovalkey'
import { Redis } from 'ioredis'
import { createClient } from 'redis'
import { createClient as createClient6 } from 'redis6'
import { failFastClient } from './clients'

// Redis really dies (SIGKILL) and comes back, or stalls (DEBUG SLEEP), while requests flow,
// with each client library. The client is configured as docs/redis.md recommends: no offline
// queue (fail fast instead of queueing every request while Redis is away), one retry, quick
// reconnects.
const TIMEOUT_MS = 150
// Margin for timers on a busy 2-core CI machine; time the machine stalled comes on top.
const SLACK_MS = 150

let server: RedisServer
const closers: (() => void)[] = []
const unhandled: unknown[] = []
const onUnhandled = (reason: unknown): void => {
  unhandled.push(reason)
}

/** A client set up to fail fast, and what the test reads of it. */
interface FailFastClient {
  client: RedisClientLike
  /** Resolves once the client is connected and ready for commands. */
  ready(): Promise<void>
  /** Commands queued while disconnected; undefined where the library does not show it. */
  queued(): number | undefined
}

async function readyClient(library: RedisLibrary): Promise<FailFastClient> {
  if (library.startsWith('node-redis')) {
    const options = {
      url: server.url,
      disableOfflineQueue: true,
      socket: { reconnectStrategy: () => 25, connectTimeout: 500 },
    }
    const client = library === 'node-redis@6' ? createClient6(options) : createClient(options)
    client.on('error', () => undefined)
    closers.push(() => client.destroy())
    await client.connect()
    const ready = async () => {
      while (!client.isReady) await delay(5)
    }
    // node-redis keeps its queue private; with disableOfflineQueue it refuses commands at once.
    return { client, ready, queued: () => undefined }
  }
  const client = await failFastClient(server, library === 'ioredis' ? Redis : Valkey)
  closers.push(() => client.disconnect())
  const ready = async () => {
    if (client.status !== 'ready') await once(client, 'ready')
  }
  const queued = () =>
    (client as unknown as { offlineQueue: { length: number } }).offlineQueue.length
  return { client, ready, queued }
}

interface Sample {
  mode: string
  decision: Decision
  ms: number
}

beforeAll(async () => {
  server = await startRedis()
  process.on('unhandledRejection', onUnhandled)
})

afterAll(async () => {
  process.off('unhandledRejection', onUnhandled)
  for (const close of closers) close()
  await server?.stop()
})

describe.each(REDIS_LIBRARIES)('%s', (library) => {
  test('SIGKILL mid-traffic: allow, deny and a fallback answer within the timeout; enforcement resumes', async () => {
    const connected = await readyClient(library)
    const store = new RedisStore({ client: connected.client, blockCache: false })
    const base = {
      store,
      algorithm: 'fixed-window',
      limit: 3,
      window: '1h',
      timeoutMs: TIMEOUT_MS,
      // A short cool-off, so that the breaker's probe finds Redis back within the test.
      breaker: { failures: 5, coolOffMs: 50 },
    } as const
    // The fallback: a memory limiter with the limit divided by the number of app instances.
    const fallback = createLimiter({ algorithm: 'fixed-window', limit: 2, window: '1h' })
    const limiters: Record<string, Limiter> = {
      allow: createLimiter({ ...base, onStoreError: 'allow' }),
      deny: createLimiter({ ...base, onStoreError: 'deny' }),
      fallback: createLimiter({ ...base, onStoreError: fallback }),
    }
    const key = `kill:${Date.now()}`
    const samples: Sample[] = []
    let phase: 'up' | 'down' | 'back' = 'up'
    const byPhase: Record<string, Sample[]> = { up: [], down: [], back: [] }
    let running = true
    let queueSeen: number | undefined
    const stalls = watchStalls()
    const traffic = (async () => {
      while (running) {
        for (const [mode, limiter] of Object.entries(limiters)) {
          const started = performance.now()
          const decision = await limiter.consume(key)
          const sample = { mode, decision, ms: performance.now() - started }
          samples.push(sample)
          byPhase[phase].push(sample)
        }
        const queued = connected.queued()
        if (queued !== undefined) queueSeen = Math.max(queueSeen ?? 0, queued)
        await delay(3)
      }
    })()

    await delay(100)
    phase = 'down'
    await server.kill()
    await delay(400)
    phase = 'back'
    await server.restart()
    await connected.ready()
    await delay(300)
    running = false
    await traffic
    const stalledMs = stalls.stop()

    expect(samples.every((s) => s.ms <= TIMEOUT_MS + SLACK_MS + stalledMs)).toBe(true)
    // ioredis and iovalkey show their offline queue: it stayed empty. node-redis's is private.
    expect(queueSeen).toBe(library.startsWith('node-redis') ? undefined : 0)

    // Up: enforced by Redis (three each, as all three limiters share one state key).
    expect(byPhase.up.some((s) => !s.decision.allowed && !s.decision.degraded)).toBe(true)
    expect(byPhase.up.every((s) => !s.decision.degraded)).toBe(true)

    // Down: each mode answers its own way.
    const down = (mode: string) =>
      byPhase.down.filter((s) => s.mode === mode && s.decision.degraded)
    expect(down('allow').length).toBeGreaterThan(5)
    expect(down('allow').every((s) => s.decision.allowed)).toBe(true)
    expect(down('deny').length).toBeGreaterThan(5)
    expect(down('deny').every((s) => !s.decision.allowed && s.decision.retryAfterMs > 0)).toBe(true)
    expect(down('fallback').length).toBeGreaterThan(5)
    // The memory fallback enforces its own (smaller) limit.
    expect(down('fallback').filter((s) => s.decision.allowed).length).toBe(2)

    // Back: Redis enforces again (it restarted empty, so the key had room for three once more).
    const back = byPhase.back.filter((s) => !s.decision.degraded)
    expect(back.length).toBeGreaterThan(5)
    expect(back.filter((s) => s.decision.allowed).length).toBe(3)
    const last = await limiters.deny.consume(key)
    expect(last).toMatchObject({ allowed: false, degraded: false })

    expect(unhandled).toEqual([])
  })

  test('a stalled Redis (DEBUG SLEEP) counts as a failure after timeoutMs, and its late charges are refunded', async () => {
    const { client } = await readyClient(library)
    const admin = new Redis({ host: server.host, port: server.port, maxRetriesPerRequest: 1 })
    closers.push(() => admin.disconnect())
    // Connected before the stall: a DEBUG SLEEP held in the offline queue while the connection
    // came up could reach Redis after the consumes it is meant to stall (a loaded CI run).
    await admin.ping()
    const store = new RedisStore({ client, blockCache: false })
    const lines: string[] = []
    // A token bucket refills one token per 6 minutes here, so the count read at the end does not
    // depend on where the wall clock stands: a sliding window's minute boundary falling inside
    // the test would weight the first request below 1.
    const options = {
      store,
      algorithm: 'token-bucket',
      limit: 10,
      window: '1h',
      timeoutMs: TIMEOUT_MS,
      logger: { warn: (line: string) => lines.push(line) },
    } as const
    const allow = createLimiter({ ...options, onStoreError: 'allow' })
    const strict = createLimiter(options) // 'throw'
    const key = `stall:${Date.now()}`
    expect((await allow.consume(key)).degraded).toBe(false)

    const sleeping = admin.call('DEBUG', 'SLEEP', '0.6')
    await delay(20)
    const stalls = watchStalls()
    const started = performance.now()
    const [degraded, thrown] = await Promise.all([
      allow.consume(key),
      strict.consume(key).then(
        () => undefined,
        (error: unknown) => error,
      ),
    ])
    const elapsed = performance.now() - started
    const stalledMs = stalls.stop()
    expect(degraded).toMatchObject({ allowed: true, degraded: true })
    expect(thrown).toBeInstanceOf(StoreError)
    expect(thrown).toMatchObject({ code: 'ERR_SLUICE_STORE_TIMEOUT' })
    expect(elapsed).toBeGreaterThanOrEqual(TIMEOUT_MS - 5)
    expect(elapsed).toBeLessThanOrEqual(TIMEOUT_MS + SLACK_MS + stalledMs)
    await sleeping

    // Redis ran both timed-out consumes when it woke and admitted them; neither caller was
    // answered by Redis, so each late charge is refunded: 9 left, as after the first request.
    await storeSettled(store)
    const after = await strict.peek(key)
    expect(after).toMatchObject({ degraded: false, remaining: 9 })
    expect(lines).toEqual([
      expect.stringMatching(
        /^\[sluice\] RedisStore is failing \(store call took longer than timeoutMs/,
      ),
      '[sluice] RedisStore recovered after ' + lines[1]?.split(' after ')[1],
    ])
    expect(lines[1]).toMatch(/; 2 requests were answered without it$/)
    expect(unhandled).toEqual([])
  })
})
