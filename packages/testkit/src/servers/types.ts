/**
 * Owns the shapes of the servers the test kit starts, and its limits and timeouts.
 */

export interface HostPort {
  host: string
  port: number
}

export interface RedisServer extends HostPort {
  /** `redis://127.0.0.1:<port>` */
  url: string
  /** SIGTERM, SIGKILL after a bounded wait; removes the temp dir. Idempotent. */
  stop(): Promise<void>
  /** SIGKILL and wait for the exit: simulates a crash. */
  kill(): Promise<void>
  /** Starts again on the same port (empty: nothing is persisted) and waits until it answers. */
  restart(): Promise<void>
  /** SIGSTOP: the process hangs with its connections open, as a stalled host does. */
  pause(): void
  /** SIGCONT: a paused process runs again and works through what queued meanwhile. */
  resume(): void
  /** The server process's id while it runs (a restart gives a new one): for /proc readings. */
  pid(): number | undefined
}

export interface StartRedisOptions {
  /** Extra `redis-server` arguments, appended last (so they override the defaults). */
  args?: string[]
}

export interface RedisClusterHandle {
  /** One entry per master, in the order given to `redis-cli --cluster create`. */
  nodes: HostPort[]
  /** The node processes, same order as `nodes` (to kill or restart one). */
  servers: RedisServer[]
  stop(): Promise<void>
}

export interface StartRedisClusterOptions {
  /** Number of masters, at least 3 (default 3). There are no replicas. */
  masters?: number
}

export interface MoveSlotOptions {
  /**
   * Called once the keys are on the target but the source still owns the slot: a key of the
   * slot read through the source now gets an ASK redirect.
   */
  afterKeysMigrated?: () => Promise<void> | void
}

export interface MemcachedServer extends HostPort {
  /** `127.0.0.1:<port>`, the form memjs `Client.create` expects. */
  servers: string
  stop(): Promise<void>
  kill(): Promise<void>
  restart(): Promise<void>
  pause(): void
  resume(): void
  /** The server process's id while it runs (a restart gives a new one): for /proc readings. */
  pid(): number | undefined
}

export const HOST = '127.0.0.1'
export const CLUSTER_BUS_OFFSET = 10000
export const MAX_PORT = 65535
export const START_TIMEOUT_MS = 10_000
export const CLUSTER_TIMEOUT_MS = 20_000
export const REDIS_STOP_GRACE_MS = 5_000
// memcached only notices SIGTERM on its 1 s clock tick, and has nothing to flush.
export const MEMCACHED_STOP_GRACE_MS = 200
export const PROBE_TIMEOUT_MS = 1_000
export const COMMAND_TIMEOUT_MS = 5_000
export const POLL_MS = 20
export const PORT_ATTEMPTS = 5
export const LOG_TAIL_CHARS = 2_000
export const INSTALL_HINT = 'Install it with: apt-get install redis-server memcached'

export interface PostgresServer extends HostPort {
  /** `postgres://sluice@127.0.0.1:<port>/postgres` (trust authentication, loopback only). */
  url: string
  /** The superuser initdb created (`sluice`). */
  user: string
  stop(): Promise<void>
  kill(): Promise<void>
  /** Stops and starts again on the same port; the data directory (and every row) is kept. */
  restart(): Promise<void>
  pause(): void
  resume(): void
  /** The server process's id while it runs (a restart gives a new one): for /proc readings. */
  pid(): number | undefined
}

export interface StartPostgresOptions {
  /**
   * `-c name=value` settings appended last (so they override the defaults). The defaults turn
   * fsync off for speed; a benchmark passes `{ fsync: 'on', synchronous_commit: 'on' }`.
   */
  settings?: Record<string, string>
}

export const POSTGRES_STOP_GRACE_MS = 5_000
