/**
 * Launchers for real Redis and Memcached servers, one set per test file.
 *
 * Every server is a child process bound to 127.0.0.1 on a free port, with its own temp dir
 * (holding its log). Children are tracked on the host process so that a jest worker that exits
 * or is killed with SIGINT/SIGTERM/SIGHUP takes its servers down with it.
 */
export type {
  HostPort,
  MemcachedServer,
  MoveSlotOptions,
  PostgresServer,
  StartPostgresOptions,
  RedisClusterHandle,
  RedisServer,
  StartRedisClusterOptions,
  StartRedisOptions,
} from './servers/types'
export { freeClusterPort, freePort } from './servers/children'
export { keySlot, moveSlot, slotOwner, startRedisCluster } from './servers/cluster'
export { startMemcached } from './servers/memcached'
export { startPostgres } from './servers/postgres'
export { startRedis, startRedisSentinel, type RedisSentinel } from './servers/redis'
