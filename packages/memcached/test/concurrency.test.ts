import { ConfigError, createLimiter } from '@sluice/core'
import { MemcachedStore } from '@sluice/memcached'
import { startMemcached, type MemcachedServer } from '@sluice/testkit'

let server: MemcachedServer

beforeAll(async () => {
  server = await startMemcached()
})

afterAll(async () => {
  await server?.stop()
})

test('concurrency limits are refused at creation, naming the store', async () => {
  const store = new MemcachedStore({ servers: server.servers })
  const create = () => createLimiter({ limit: 5, window: '1m', concurrency: 2, store })
  expect(create).toThrow(ConfigError)
  expect(create).toThrow(
    '`concurrency` needs a store that keeps slots (MemoryStore, RedisStore); MemcachedStore does not',
  )
  // The same store still runs rate limits.
  expect((await createLimiter({ limit: 5, window: '1m', store }).consume('k')).allowed).toBe(true)
  await store.close?.()
})
