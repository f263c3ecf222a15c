/**
 * Owns connecting to Redis with each client library RedisStore accepts, so a suite runs once
 * per library: ioredis, iovalkey and node-redis, standalone and Cluster. And which server the
 * conformance suite runs against: a launched redis-server, or the one SLUICE_REDIS_URL names.
 */
import type { RedisClientLike } from '@sluice/redis'
import { Cluster as ValkeyCluster, Redis as Valkey } from 'iovalkey'
import { Cluster, Redis } from 'ioredis'
import { createClient, createCluster } from 'redis'
import * as redis6 from 'redis6'
import { startRedis, type HostPort } from './servers'

/** The client libraries RedisStore accepts (node-redis in its two major versions). */
export type RedisLibrary = 'ioredis' | 'iovalkey' | 'node-redis' | 'node-redis@6'

export const REDIS_LIBRARIES: readonly RedisLibrary[] = [
  'ioredis',
  'iovalkey',
  'node-redis',
  'node-redis@6',
]

/** A connected client of one library, to pass as RedisStore's `client`. */
export interface LibraryClient {
  readonly library: RedisLibrary
  readonly client: RedisClientLike
  /** Drops the connections at once, without waiting for replies (a paused server sends none). */
  close(): Promise<void>
}

/**
 * Fails fast where a server is gone (one attempt per command, no reconnect loop keeping jest
 * alive), and swallows the connection errors a test provokes on purpose.
 */
const IOREDIS_OPTIONS = { maxRetriesPerRequest: 1 } as const

/** A connected client of `library` to the standalone server at `url` (`redis://host:port`). */
export async function connectRedis(library: RedisLibrary, url: string): Promise<LibraryClient> {
  if (library.startsWith('node-redis')) {
    // node-redis 6 is `redis6`, an alias in the root devDependencies.
    const client = library === 'node-redis@6' ? redis6.createClient({ url }) : createClient({ url })
    client.on('error', () => undefined)
    await client.connect()
    return { library, client, close: async () => client.destroy() }
  }
  const client =
    library === 'ioredis' ? new Redis(url, IOREDIS_OPTIONS) : new Valkey(url, IOREDIS_OPTIONS)
  client.on('error', () => undefined)
  return { library, client, close: async () => client.disconnect() }
}

/** A connected Cluster client of `library`, given the cluster's masters. */
export async function connectRedisCluster(
  library: RedisLibrary,
  nodes: readonly HostPort[],
): Promise<LibraryClient> {
  if (library.startsWith('node-redis')) {
    const rootNodes = nodes.map((n) => ({ url: `redis://${n.host}:${n.port}` }))
    const cluster =
      library === 'node-redis@6'
        ? redis6.createCluster({ rootNodes })
        : createCluster({ rootNodes })
    cluster.on('error', () => undefined)
    await cluster.connect()
    return { library, client: cluster, close: async () => cluster.destroy() }
  }
  const options = { redisOptions: IOREDIS_OPTIONS }
  const cluster =
    library === 'ioredis'
      ? new Cluster([...nodes], options)
      : new ValkeyCluster([...nodes], options)
  cluster.on('error', () => undefined)
  return { library, client: cluster, close: async () => cluster.disconnect() }
}

/** A Redis-compatible server for a suite: its URL, and how to let it go. */
export interface RedisUnderTest {
  readonly url: string
  /** Stops the server if the suite launched it; a server named by URL is left running. */
  stop(): Promise<void>
}

/**
 * The server SLUICE_REDIS_URL names (another Redis version, Valkey, Dragonfly, a managed
 * service; the suite only writes fresh keys, and never flushes), else a redis-server launched
 * for the suite.
 */
export async function redisUnderTest(): Promise<RedisUnderTest> {
  const url = process.env.SLUICE_REDIS_URL
  if (url !== undefined && url !== '') return { url, stop: () => Promise.resolve() }
  const server = await startRedis()
  return { url: server.url, stop: () => server.stop() }
}
