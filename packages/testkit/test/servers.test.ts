import { readFileSync } from 'node:fs'
import Redis, { Cluster } from 'ioredis'
import { Client } from 'memjs'
import {
  freeClusterPort,
  freePort,
  keySlot,
  moveSlot,
  slotOwner,
  startMemcached,
  startRedis,
  startRedisCluster,
  type MemcachedServer,
  type RedisClusterHandle,
  type RedisServer,
} from '@sluice/testkit'

// Fail fast: no reconnects, no retries, so a dead server shows up as a rejected command.
const FAIL_FAST = { maxRetriesPerRequest: 1, retryStrategy: () => null }
const quietLogger = { log: (): void => undefined }

const redisClients: Redis[] = []

function redisClient(node: { host: string; port: number }): Redis {
  const client = new Redis(node.port, node.host, FAIL_FAST)
  client.on('error', () => undefined) // expected while a server is down
  redisClients.push(client)
  return client
}

afterAll(() => {
  // disconnect() on an ended client (its server was killed) arms a 2 s timer that never clears.
  for (const client of redisClients) if (client.status !== 'end') client.disconnect()
})

describe('freePort', () => {
  test('returns bindable ports, and cluster ports with a free bus port', async () => {
    const port = await freePort()
    expect(port).toBeGreaterThan(0)
    const clusterPort = await freeClusterPort()
    expect(clusterPort + 10000).toBeLessThanOrEqual(65535)
  })
})

describe('startRedis', () => {
  let server: RedisServer | undefined

  afterAll(async () => {
    await server?.stop()
  })

  test('serves commands, fails once killed, serves again after restart on the same port', async () => {
    server = await startRedis()
    expect(server.port).not.toBe(6379)
    expect(server.url).toBe(`redis://127.0.0.1:${server.port}`)

    const before = redisClient(server)
    await before.set('greeting', 'hello')
    expect(await before.get('greeting')).toBe('hello')

    const port = server.port
    const pid = server.pid()
    // The process's own: /proc says it listens as redis-server.
    expect(readFileSync(`/proc/${pid}/comm`, 'utf8').trim()).toBe('redis-server')
    await server.kill()
    await expect(before.get('greeting')).rejects.toThrow()
    expect(server.pid()).toBeUndefined()

    await server.restart()
    expect(server.port).toBe(port)
    expect(server.pid()).not.toBe(pid)
    expect(readFileSync(`/proc/${server.pid()}/comm`, 'utf8').trim()).toBe('redis-server')
    const after = redisClient(server)
    expect(await after.get('greeting')).toBeNull() // nothing is persisted
    await after.set('greeting', 'again')
    expect(await after.get('greeting')).toBe('again')
  })

  test('passes extra arguments to redis-server', async () => {
    const custom = await startRedis({ args: ['--maxmemory', '12mb'] })
    try {
      expect(await redisClient(custom).config('GET', 'maxmemory')).toEqual([
        'maxmemory',
        String(12 * 1024 * 1024),
      ])
    } finally {
      await custom.stop()
    }
  })
})

describe('startRedisCluster', () => {
  let cluster: RedisClusterHandle | undefined
  let client: Cluster | undefined

  function started(): { cluster: RedisClusterHandle; client: Cluster } {
    if (!cluster || !client) throw new Error('the cluster did not start')
    return { cluster, client }
  }

  beforeAll(async () => {
    cluster = await startRedisCluster()
    client = new Cluster(cluster.nodes, {
      clusterRetryStrategy: () => null,
      redisOptions: { maxRetriesPerRequest: 1 },
    })
    client.on('error', () => undefined)
  }, 30_000)

  afterAll(async () => {
    client?.disconnect()
    await cluster?.stop()
  })

  test('serves keys of many slots through every master', async () => {
    const { cluster, client } = started()
    expect(cluster.nodes).toHaveLength(3)
    const keys = Array.from({ length: 300 }, (_, i) => `key:${i}`)
    await Promise.all(keys.map((key) => client.set(key, key)))
    expect(await Promise.all(keys.map((key) => client.get(key)))).toEqual(keys)
    expect(new Set(keys.map((key) => keySlot(key))).size).toBeGreaterThan(250)
    const sizes = await Promise.all(cluster.nodes.map((node) => redisClient(node).dbsize()))
    for (const size of sizes) expect(size).toBeGreaterThan(0)
  })

  test('keySlot agrees with CLUSTER KEYSLOT, hash tags included', async () => {
    const node = redisClient(started().cluster.nodes[0])
    for (const key of ['foo', 'user:{42}:hits', '{}x', 'a{b}c{d}', 'ключ']) {
      expect(keySlot(key)).toBe(await node.cluster('KEYSLOT', key))
    }
  })

  test('moveSlot migrates a slot and its keys; clients follow ASK then MOVED', async () => {
    const { cluster, client } = started()
    const key = 'reshard:{slot-under-test}'
    await client.set(key, 'kept')
    const slot = keySlot(key)
    const from = await slotOwner(cluster, slot)
    const to = (from + 1) % cluster.nodes.length
    const oldOwner = redisClient(cluster.nodes[from])
    let readDuringMigration: string | null = null

    const moved = await moveSlot(cluster, slot, from, to, {
      afterKeysMigrated: async () => {
        await expect(oldOwner.get(key)).rejects.toThrow(/^ASK /)
        readDuringMigration = await client.get(key)
      },
    })

    expect(moved).toBe(1)
    expect(readDuringMigration).toBe('kept')
    expect(await slotOwner(cluster, slot)).toBe(to)
    await expect(oldOwner.get(key)).rejects.toThrow(/^MOVED /)
    expect(await client.get(key)).toBe('kept')
    expect(await redisClient(cluster.nodes[to]).get(key)).toBe('kept')
  })
})

describe('startMemcached', () => {
  let server: MemcachedServer | undefined
  const clients: Client[] = []

  function memcachedClient(servers: string): Client {
    const client = Client.create(servers, { retries: 0, timeout: 1, logger: quietLogger })
    clients.push(client)
    return client
  }

  afterAll(async () => {
    for (const client of clients) client.close()
    await server?.stop()
  })

  test('serves commands, fails once killed, serves again after restart on the same port', async () => {
    server = await startMemcached()
    expect(server.servers).toBe(`127.0.0.1:${server.port}`)

    const before = memcachedClient(server.servers)
    await before.set('greeting', 'hello', { expires: 60 })
    expect((await before.get('greeting')).value?.toString()).toBe('hello')

    await server.kill()
    await expect(before.get('greeting')).rejects.toThrow()

    await server.restart()
    const after = memcachedClient(server.servers)
    expect((await after.get('greeting')).value).toBeNull()
    await after.set('greeting', 'again', { expires: 60 })
    expect((await after.get('greeting')).value?.toString()).toBe('again')
  })
})
