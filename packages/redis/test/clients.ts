// ioredis and iovalkey clients of the failure tests, configured as docs/redis.md recommends.
import { once } from 'node:events'
import { Redis as Valkey } from 'iovalkey'
import { Redis } from 'ioredis'
import type { RedisServer } from '@sluice/testkit'

/**
 * A client without an offline queue (fail fast instead of queueing every request while Redis
 * is away), with one retry and quick reconnects, once it is ready. Its connection errors reach
 * the limiter as store failures, so they are not logged.
 */
export async function failFastClient(
  server: RedisServer,
  Client: typeof Redis | typeof Valkey = Redis,
): Promise<Redis> {
  const client = new Client({
    host: server.host,
    port: server.port,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    retryStrategy: () => 25,
    connectTimeout: 500,
  })
  client.on('error', () => undefined)
  if (client.status !== 'ready') await once(client, 'ready')
  // iovalkey is a fork of ioredis with the same API.
  return client as Redis
}
