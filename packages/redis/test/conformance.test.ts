import { RedisStore, type RedisStoreOptions } from '@sluice/redis'
import { describeStoreConformance, startRedis, startRedisCluster } from '@sluice/testkit'
import { Cluster, Redis } from 'ioredis'

// The same cases as MemoryStore, with the limiter's clock deciding (time: 'client'). The
// tolerance keeps keys alive while the fake clock stands still and real time passes.

/** The conformance suite on a private redis-server, with a store built from `options`. */
function standalone(name: string, options: Omit<RedisStoreOptions, 'client'> = {}): void {
  describeStoreConformance(`RedisStore (standalone${name})`, async () => {
    const server = await startRedis()
    const client = new Redis({ port: server.port, host: server.host, maxRetriesPerRequest: 1 })
    const store = new RedisStore({ client, time: 'client', clockToleranceMs: 60_000, ...options })
    return {
      store,
      close: async () => {
        client.disconnect()
        await server.stop()
      },
    }
  })
}

// Consumes of one event-loop turn share one script call per policy (batchSize 32, the default).
standalone('')
// Every consume its own script call.
standalone(', batchSize: 1', { batchSize: 1 })
// The shared single-policy scripts (the policy in ARGV), which stores with more
// configurations than policyScripts fall back to.
standalone(', policyScripts: 0', { policyScripts: 0 })

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
