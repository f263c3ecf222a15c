import { RedisStore } from '@sluice/redis'
import { describeStoreConformance, startRedis, startRedisCluster } from '@sluice/testkit'
import { Cluster, Redis } from 'ioredis'

// The same cases as MemoryStore, with the limiter's clock deciding (time: 'client'). The
// tolerance keeps keys alive while the fake clock stands still and real time passes.
describeStoreConformance('RedisStore (standalone)', async () => {
  const server = await startRedis()
  const client = new Redis({ port: server.port, host: server.host, maxRetriesPerRequest: 1 })
  const store = new RedisStore({ client, time: 'client', clockToleranceMs: 60_000 })
  return {
    store,
    close: async () => {
      client.disconnect()
      await server.stop()
    },
  }
})

// The shared single-policy scripts (the policy in ARGV), which stores with more
// configurations than policyScripts fall back to.
describeStoreConformance('RedisStore (standalone, policyScripts: 0)', async () => {
  const server = await startRedis()
  const client = new Redis({ port: server.port, host: server.host, maxRetriesPerRequest: 1 })
  const store = new RedisStore({
    client,
    time: 'client',
    clockToleranceMs: 60_000,
    policyScripts: 0,
  })
  return {
    store,
    close: async () => {
      client.disconnect()
      await server.stop()
    },
  }
})

describeStoreConformance(
  'RedisStore (3-node cluster)',
  async () => {
    const cluster = await startRedisCluster()
    const client = new Cluster(cluster.nodes, { redisOptions: { maxRetriesPerRequest: 1 } })
    const store = new RedisStore({ client, time: 'client', clockToleranceMs: 60_000 })
    return {
      store,
      close: async () => {
        client.disconnect()
        await cluster.stop()
      },
    }
  },
  { traceRuns: 25 },
)
