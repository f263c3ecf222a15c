// One redis-server and one ioredis client for a test file: started before its tests, stopped
// after them.
import type { RedisClientLike } from '@sluice/redis'
import { connectRedis, startRedis, type LibraryClient, type RedisServer } from '@sluice/testkit'

export interface OneRedis {
  readonly server: RedisServer
  readonly client: RedisClientLike
}

/** Registers the file's beforeAll and afterAll; read the fields in tests (set once started). */
export function oneRedis(): OneRedis {
  let server: RedisServer | undefined
  let connected: LibraryClient | undefined
  beforeAll(async () => {
    server = await startRedis()
    connected = await connectRedis('ioredis', server.url)
  })
  afterAll(async () => {
    await connected?.close()
    await server?.stop()
  })
  return {
    get server() {
      return server as RedisServer
    },
    get client() {
      return (connected as LibraryClient).client
    },
  }
}
