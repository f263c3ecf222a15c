/**
 * Owns standalone Redis and Redis Sentinel servers.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { freePort } from './children'
import { lifecycle, startManaged } from './managed'
import { redisIsReady } from './probes'
import { HOST, HostPort, REDIS_STOP_GRACE_MS, RedisServer, StartRedisOptions } from './types'

// ---------------------------------------------------------------------------------------------
// Redis

export function redisArgs(port: number, dir: string): string[] {
  return [
    '--port',
    String(port),
    '--bind',
    HOST,
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    dir,
    '--daemonize',
    'no',
    // Lets tests use DEBUG SLEEP to simulate a slow server.
    '--enable-debug-command',
    'local',
  ]
}

export async function startRedisWith(
  extraArgs: (dir: string) => string[],
  pickPort: () => Promise<number>,
): Promise<RedisServer> {
  const server = await startManaged({
    name: 'redis-server',
    args: (port, dir) => [...redisArgs(port, dir), ...extraArgs(dir)],
    isReady: redisIsReady,
    pickPort,
    stopGraceMs: REDIS_STOP_GRACE_MS,
  })
  const { port } = server
  return { host: HOST, port, url: `redis://${HOST}:${port}`, ...lifecycle(server) }
}

/** A standalone `redis-server` on 127.0.0.1 and a free port, without persistence. */
export function startRedis(opts: StartRedisOptions = {}): Promise<RedisServer> {
  const args = opts.args ?? []
  return startRedisWith(() => args, freePort)
}

// ---------------------------------------------------------------------------------------------
// Redis Sentinel

export interface RedisSentinel extends HostPort {
  /** The name the sentinel monitors the master under (ioredis's `name` option). */
  name: string
  /** SIGTERM, SIGKILL after a bounded wait; removes the temp dir. Idempotent. */
  stop(): Promise<void>
}

/**
 * A `redis-server --sentinel` on 127.0.0.1 and a free port, monitoring `master` under `name`
 * (quorum 1). Sentinel rewrites its configuration file, so it gets one of its own in its dir.
 */
export async function startRedisSentinel(
  master: HostPort,
  name = 'sluice',
): Promise<RedisSentinel> {
  const server = await startManaged({
    name: 'redis-server',
    args: (port, dir) => {
      const config = join(dir, 'sentinel.conf')
      writeFileSync(
        config,
        [
          `port ${port}`,
          `bind ${HOST}`,
          `dir ${dir}`,
          `sentinel monitor ${name} ${master.host} ${master.port} 1`,
          `sentinel down-after-milliseconds ${name} 1000`,
          `sentinel failover-timeout ${name} 5000`,
          '',
        ].join('\n'),
      )
      return [config, '--sentinel']
    },
    isReady: redisIsReady,
    pickPort: freePort,
    stopGraceMs: REDIS_STOP_GRACE_MS,
  })
  return { host: HOST, port: server.port, name, stop: () => server.stop() }
}
