/**
 * Owns the one interface RedisStore talks to Redis through, whichever library made the client
 * (adapters: ioredis.ts, node-redis.ts, upstash.ts; which one: detect.ts), and the shapes of the clients
 * it accepts.
 */

/**
 * What RedisStore needs from a client. Commands take their arguments as Redis does, after the
 * command name (`evalsha(sha, numkeys, ...keys, ...args)`), so the ioredis adapter is its own
 * methods bound, at no cost per call. Integer replies are numbers; an error inside an array
 * reply (a batch's failed decision) is an Error in that array.
 */
export interface ScriptClient {
  /** The library that made the client, for messages. */
  readonly library: 'ioredis' | 'node-redis' | '@upstash/redis'
  /** A Cluster: every script touches one slot, and the store sends no batches. */
  readonly isCluster: boolean
  /**
   * Every command is sent within the request that made it: no batch across requests (Cloudflare
   * Workers, where a request waiting on another request's I/O is cancelled as hung).
   */
  readonly perRequest?: boolean
  /** EVALSHA sha numkeys ...keys ...args */
  evalsha(...command: string[]): Promise<unknown>
  /** EVAL lua numkeys ...keys ...args */
  eval(...command: string[]): Promise<unknown>
  /** DEL of keys that share one hash tag. */
  del(keys: readonly string[]): Promise<unknown>
  /**
   * The same client writing each command at once, where the client itself would hold it
   * (ioredis auto-pipelining): what batches are sent through (see batch.ts). Absent: this one.
   */
  readonly direct?: ScriptClient
}

/** Any function: the shapes below only say which methods a client has. */
type Method = (...args: never[]) => unknown

/**
 * An ioredis `Redis` (standalone or Sentinel) or `Cluster`, or the same from iovalkey (a fork
 * of ioredis with the same API). Told apart from node-redis at run time by `evalshaBuffer`,
 * which the store calls but ioredis's types do not declare.
 */
export interface IoredisLikeClient {
  evalsha: Method
  eval: Method
  del: Method
  readonly isCluster: boolean
}

/**
 * A node-redis (`redis` 5 or 6) client from `createClient` or cluster from `createCluster`.
 * Told apart from ioredis by `evalSha`; a cluster by `getSlotRandomNode`.
 */
export interface NodeRedisLikeClient {
  evalSha: Method
  eval: Method
  del: Method
}

/**
 * An `@upstash/redis` `Redis` REST client (`new Redis({ url, token })`, `Redis.fromEnv()`),
 * for edge runtimes without TCP. Told apart by `createScript` and `pipeline`.
 */
export interface UpstashLikeClient {
  evalsha: Method
  eval: Method
  pipeline: Method
  createScript: Method
}

/** A client RedisStore accepts (see RedisStoreOptions.client). */
export type RedisClientLike = IoredisLikeClient | NodeRedisLikeClient | UpstashLikeClient
