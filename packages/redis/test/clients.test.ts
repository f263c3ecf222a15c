import { createLimiter, ConfigError, type LimiterOptions } from '@sluice/core'
import {
  policyKeyId,
  RedisStore,
  type RedisClientLike,
  type RedisStoreOptions,
} from '@sluice/redis'
import {
  connectRedis,
  connectRedisCluster,
  REDIS_LIBRARIES,
  startRedis,
  startRedisCluster,
  type LibraryClient,
  type RedisClusterHandle,
  type RedisServer,
} from '@sluice/testkit'
import { Redis } from 'ioredis'

// What each client library must do the same: run every kind of script, reload it after
// SCRIPT FLUSH by one EVAL that counts once, fail one decision of a batch alone, and on a
// Cluster send no batches. The conformance suite (conformance.test.ts) checks the decisions.

let server: RedisServer
let cluster: RedisClusterHandle
/** ioredis connections to inspect the servers with, whichever library the store uses. */
let admin: Redis
const nodes: Redis[] = []
const opened: LibraryClient[] = []

beforeAll(async () => {
  server = await startRedis()
  cluster = await startRedisCluster()
  admin = new Redis({ host: server.host, port: server.port, maxRetriesPerRequest: 1 })
  for (const node of cluster.nodes) nodes.push(new Redis({ ...node, maxRetriesPerRequest: 1 }))
}, 30_000)

afterAll(async () => {
  for (const { close } of opened) await close()
  admin?.disconnect()
  for (const node of nodes) node.disconnect()
  await server?.stop()
  await cluster?.stop()
})

let keys = 0
const freshKey = (): string => `c${Date.now().toString(36)}${keys++}`

/** EVAL and EVALSHA calls on `servers` since their last CONFIG RESETSTAT. */
async function scriptCalls(servers: readonly Redis[]): Promise<{ eval: number; evalsha: number }> {
  const calls = { eval: 0, evalsha: 0 }
  for (const node of servers) {
    const info = await node.info('commandstats')
    for (const [, name, n] of info.matchAll(/^cmdstat_(evalsha|eval):calls=(\d+)/gm)) {
      calls[name as 'eval' | 'evalsha'] += Number(n)
    }
  }
  return calls
}

async function flushScripts(servers: readonly Redis[]): Promise<void> {
  for (const node of servers) {
    await node.script('FLUSH')
    await node.config('RESETSTAT')
  }
}

describe('the client option', () => {
  test.each([
    [{}, 'an object (Object) with neither evalshaBuffer, evalSha nor createScript'],
    [null, 'null'],
    ['redis://127.0.0.1:6379', '"redis://127.0.0.1:6379"'],
    [
      new (class Memcached {})(),
      'an object (Memcached) with neither evalshaBuffer, evalSha nor createScript',
    ],
    [
      { evalSha: () => undefined },
      'an object (Object) with neither evalshaBuffer, evalSha nor createScript',
    ],
  ])('%p is refused at creation, naming what was passed', (client, described) => {
    const create = () => new RedisStore({ client: client as unknown as RedisClientLike })
    expect(create).toThrow(ConfigError)
    expect(create).toThrow(
      `\`client\` must be an ioredis or iovalkey Redis or Cluster client, a node-redis client or cluster, or an @upstash/redis Redis; got ${described}`,
    )
  })
})

/** One limiter per kind of script RedisStore runs, on `client`. */
function limiters(client: RedisClientLike, extra: Omit<RedisStoreOptions, 'client'> = {}) {
  const store = new RedisStore({ client, blockCache: false, ...extra })
  const make = (options: LimiterOptions) => createLimiter({ store, ...options })
  return {
    // A single limit: its own script, with the policy written into it.
    own: make({ algorithm: 'gcra', limit: 3, window: '1h' }),
    // Several limits: the generic script.
    generic: make({
      limits: [
        { algorithm: 'sliding-log', limit: 3, window: '1h' },
        { algorithm: 'fixed-window', limit: 5, window: '1d' },
      ],
    }),
    // More configurations than policyScripts: the shared flat script.
    shared: createLimiter({
      store: new RedisStore({ client, blockCache: false, policyScripts: 0, ...extra }),
      algorithm: 'sliding-window',
      limit: 3,
      window: '1h',
    }),
  }
}

/** Connects before the tests of the describe block; the client, once connected. */
function connectedBy(connect: () => Promise<LibraryClient>): () => RedisClientLike {
  let client: RedisClientLike | undefined
  beforeAll(async () => {
    const library = await connect()
    opened.push(library)
    client = library.client
  })
  return () => client as RedisClientLike
}

/** A block, a blocked consume, a reset and a penalty on a fresh key; `between` after its first consume. */
async function blockResetPenalize(client: RedisClientLike, between?: () => Promise<void>) {
  const { own, generic } = limiters(client)
  const key = freshKey()
  await own.consume(key)
  await between?.()
  await own.block(key, 60_000)
  expect(await own.consume(key)).toMatchObject({ allowed: false })
  await own.reset(key)
  expect((await own.consume(key)).remaining).toBe(2)
  await generic.penalize(key, 2)
  expect((await generic.consume(key)).remaining).toBe(0)
}

describe.each(REDIS_LIBRARIES)('%s on standalone Redis', (library) => {
  const connected = connectedBy(() => connectRedis(library, server.url))

  test.each(['own', 'generic', 'shared'] as const)(
    'the %s script, flushed (NOSCRIPT) between two decisions, is sent again once and counts once',
    async (kind) => {
      const limiter = limiters(connected())[kind]
      const key = freshKey()
      expect((await limiter.consume(key)).remaining).toBe(2)
      await flushScripts([admin])
      expect((await limiter.consume(key)).remaining).toBe(1)
      expect(await scriptCalls([admin])).toEqual({ evalsha: 1, eval: 1 })
      expect((await limiter.consume(key)).remaining).toBe(0)
      expect((await limiter.consume(key)).allowed).toBe(false)
    },
  )

  test('a batch, flushed between two, is sent again once and each of its decisions counts once', async () => {
    const { own } = limiters(connected())
    const batch = [freshKey(), freshKey(), freshKey()]
    const remaining = async () =>
      (await Promise.all(batch.map((key) => own.consume(key)))).map((d) => d.remaining)
    expect(await remaining()).toEqual([2, 2, 2])
    await flushScripts([admin])
    expect(await remaining()).toEqual([1, 1, 1])
    expect(await scriptCalls([admin])).toEqual({ evalsha: 1, eval: 1 })
  })

  test('block, reset and penalize after a flush: each reloads its script once', async () => {
    await blockResetPenalize(connected(), () => flushScripts([admin]))
    // block, consume, consume: one script each (the block reloaded, the gcra script reloaded
    // by its first consume); penalize and consume: the generic script.
    expect((await scriptCalls([admin])).eval).toBe(3)
  })

  test('a decision that fails in a batch fails alone, with the server error', async () => {
    const store = new RedisStore({ client: connected(), blockCache: false })
    const limiter = createLimiter({ store, algorithm: 'gcra', limit: 2, window: '1h' })
    const [good, bad] = [freshKey(), freshKey()]
    await admin.lpush(`sluice:{${bad}}:${policyKeyId(limiter.policies[0])}`, 'not a rate limit')
    const results = await Promise.allSettled([bad, good, bad, good].map((k) => limiter.consume(k)))
    expect(results.map((r) => r.status)).toEqual(['rejected', 'fulfilled', 'rejected', 'fulfilled'])
    expect((results[0] as PromiseRejectedResult).reason).toMatchObject({
      cause: expect.objectContaining({ message: expect.stringMatching(/^WRONGTYPE/) }),
    })
    const fulfilled = results.filter((r) => r.status === 'fulfilled')
    expect(fulfilled.map((r) => r.value.remaining)).toEqual([1, 0])
  })
})

describe.each(REDIS_LIBRARIES)('%s on a 3-node Cluster', (library) => {
  const connected = connectedBy(() => connectRedisCluster(library, cluster.nodes))

  test('no batches: one script call per consume, each in its key slot', async () => {
    const store = new RedisStore({ client: connected(), blockCache: false, batchSize: 64 })
    const limiter = createLimiter({ store, algorithm: 'fixed-window', limit: 100, window: '1h' })
    const stamp = freshKey()
    const round = () =>
      Promise.all(Array.from({ length: 40 }, (_, i) => limiter.consume(`${stamp}:${i % 8}`)))
    await round() // loads the script on every node
    for (const node of nodes) await node.config('RESETSTAT')
    const decisions = await round()
    expect(decisions.map((d) => d.remaining).sort((x, y) => x - y)).toEqual(
      Array.from({ length: 40 }, (_, i) => 90 + Math.floor(i / 8)),
    )
    expect(await scriptCalls(nodes)).toEqual({ evalsha: 40, eval: 0 })
  })

  test.each(['own', 'generic', 'shared'] as const)(
    'the %s script, flushed on every node, is sent again once per key and counts once',
    async (kind) => {
      const limiter = limiters(connected())[kind]
      const stamp = freshKey()
      const spread = Array.from({ length: 12 }, (_, i) => `${stamp}:${i}`)
      const remaining = async () =>
        (await Promise.all(spread.map((key) => limiter.consume(key)))).map((d) => d.remaining)
      expect(await remaining()).toEqual(spread.map(() => 2))
      await flushScripts(nodes)
      expect(await remaining()).toEqual(spread.map(() => 1))
      // Every consume went out as EVALSHA before any reply came back, met NOSCRIPT, and was
      // sent again with EVAL.
      expect(await scriptCalls(nodes)).toEqual({ evalsha: spread.length, eval: spread.length })
    },
  )

  test('block, reset and penalize touch one slot each', async () => {
    await blockResetPenalize(connected())
  })
})
