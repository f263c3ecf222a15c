import { MemcachedStore } from '@sluice/memcached'
import { describeStoreConformance, startMemcached } from '@sluice/testkit'

// The same cases as MemoryStore and RedisStore, on a real memcached, for every algorithm the
// store runs (sliding-log is refused at start-up, see store.test.ts).
describeStoreConformance(
  'MemcachedStore',
  async () => {
    const server = await startMemcached()
    const store = new MemcachedStore({ servers: server.servers })
    return {
      store,
      close: async () => {
        await store.close()
        await server.stop()
      },
    }
  },
  {
    algorithms: ['fixed-window', 'sliding-window', 'token-bucket', 'leaky-bucket', 'gcra'],
    // Counters read, then increment: requests in flight together read the same count.
    ordered: ['token-bucket', 'leaky-bucket', 'gcra'],
  },
)
