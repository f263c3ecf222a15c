import { RedisStore, type RedisStoreOptions } from '@sluice/redis'
import {
  connectRedis,
  connectRedisCluster,
  describeStoreConformance,
  REDIS_LIBRARIES,
  redisUnderTest,
  startRedisCluster,
  type RedisLibrary,
} from '@sluice/testkit'

// The same cases as MemoryStore, with the limiter's clock deciding (time: 'client'). The
// tolerance keeps keys alive while the fake clock stands still and real time passes. Once per
// client library; standalone on a launched redis-server, or on the server SLUICE_REDIS_URL
// names (docs/redis.md, "Portable scripts, and other servers").

/** The conformance suite on a standalone server, with a store built from `options`. */
function standalone(
  library: RedisLibrary,
  name: string,
  options: Omit<RedisStoreOptions, 'client'> = {},
): void {
  describeStoreConformance(`RedisStore on ${library} (standalone${name})`, async () => {
    const server = await redisUnderTest()
    const { client, close } = await connectRedis(library, server.url)
    const store = new RedisStore({ client, time: 'client', clockToleranceMs: 60_000, ...options })
    return {
      store,
      close: async () => {
        await close()
        await server.stop()
      },
    }
  })
}

/** The conformance suite on a 3-node Cluster, with a store built from `options`. */
function cluster(
  library: RedisLibrary,
  name: string,
  options: Omit<RedisStoreOptions, 'client'> = {},
): void {
  describeStoreConformance(
    `RedisStore on ${library} (3-node cluster${name})`,
    async () => {
      const nodes = await startRedisCluster()
      const { client, close } = await connectRedisCluster(library, nodes.nodes)
      const store = new RedisStore({ client, time: 'client', clockToleranceMs: 60_000, ...options })
      return {
        store,
        close: async () => {
          await close()
          await nodes.stop()
        },
      }
    },
    { traceRuns: 25 },
  )
}

for (const library of REDIS_LIBRARIES) {
  // Consumes of one event-loop turn share one script call per policy (batchSize 32, the default).
  standalone(library, '')
  // Every consume its own script call.
  standalone(library, ', batchSize: 1', { batchSize: 1 })
  // The shared single-policy scripts (the policy in ARGV), which stores with more
  // configurations than policyScripts fall back to.
  standalone(library, ', policyScripts: 0', { policyScripts: 0 })
  // Packed hashes; few groups, so many keys share a hash.
  standalone(library, ', packed', { packed: { groups: 16 } })

  cluster(library, '')
}

// Packed on a Cluster: a client key's hashes share the group's hash tag.
cluster('ioredis', ', packed', { packed: { groups: 16 } })
