/**
 * Owns RedisStore's options: their documentation and defaults, checked and resolved once into
 * the settings the store reads.
 */
import {
  BlockCache,
  checkKnownOptions,
  checkOneOf,
  checkPositiveInteger,
  checkWholeNumber,
  ConfigError,
  declareOptions,
  describeValue,
  invalidOption,
} from '@sluice/core/web'
import { toScriptClient } from './client/detect'
import type { RedisClientLike, ScriptClient } from './client/types'
import { checkPrefix } from './keys'

export interface BlockCacheOptions {
  /**
   * Most keys remembered as blocked; past it the least recently used is forgotten.
   * @default 10_000
   */
  maxKeys?: number
}

export interface RedisStoreOptions {
  /**
   * The application's Redis client, from any of these libraries (told apart by their methods,
   * see docs/redis.md): ioredis or iovalkey (`Redis`, standalone or Sentinel, or `Cluster`),
   * node-redis 5 or 6 (`createClient` or `createCluster`, connected by the caller), or
   * `@upstash/redis` (`new Redis({ url, token })` or `Redis.fromEnv()`, over REST, for edge
   * runtimes; docs/redis.md, "Upstash"). The store does not close it.
   */
  client: RedisClientLike
  /**
   * First part of every key: `<prefix>:{<key>}:<policy key id>` (with per-policy state keys
   * `<prefix>:{<key>}:<keys[i]>:<policy key id>`; the key's block `<prefix>:{<key>}:b`; the
   * policy key id is the policy's id written short, see policyKeyId). No braces.
   * @default 'sluice'
   */
  prefix?: string
  /**
   * Whose clock decides. `'server'`: Redis `TIME`, inside the script, so app servers with
   * skewed clocks agree. `'client'`: the limiter's clock (tests with a fake clock, managed
   * Redis that forbids `TIME` in scripts).
   * @default 'server'
   */
  time?: 'server' | 'client'
  /**
   * `time: 'client'` only: how far the app servers' clocks may disagree (ms). Keys live this
   * much longer than their state needs on the writer's clock, so a server whose clock lags
   * still finds them. Ignored with server time, where every TTL ends exactly when the state
   * is empty again.
   * @default 1000
   */
  clockToleranceMs?: number
  /**
   * Keys known to be over their limit are answered locally, without a round trip, until
   * their retry time (see BlockCache). `false` turns it off.
   * @default { maxKeys: 10_000 }
   */
  blockCache?: BlockCacheOptions | false
  /**
   * Most configurations that get a Lua script of their own, with the policies written into it
   * as constants, so a call sends only the keys (and what differs from the defaults: cost, time,
   * ...): a single policy's (algorithm, limit, window, burst, precision), or a limiter's several
   * policies (2 to 8, none a sliding-log), one script for them all. Redis keeps every script
   * loaded until SCRIPT FLUSH or a restart, hence the bound; past it the shared scripts take the
   * policies as arguments. `0` turns them off.
   * @default 100
   */
  policyScripts?: number
  /**
   * Most consumes sent to Redis in one script call. The consumes of a single-limit limiter
   * (one with its own script, see policyScripts) made in one event-loop turn are sent together
   * when the turn ends, as one EVALSHA that decides them one after another, in the order they
   * were made, each exactly as it would be alone. Redis then starts one script instead of many
   * and Node sends and parses one command: under load, more decisions per second from both.
   * A consume made alone still goes alone, at the cost of waiting for the end of the turn, as
   * ioredis's auto-pipelining does. `1` turns it off. Not on a Cluster, whose scripts may only
   * touch keys of one slot, nor for reservations (`maxDelayMs`), peeks or refunds.
   * @default 32
   */
  batchSize?: number
  /**
   * Keeps state packed: one hash per group of client keys, a field per client key and limit,
   * instead of a key of its own per client key and limit. Redis memory per client key at
   * 100,000 10-byte keys drops from 133 bytes to 63 for gcra and fixed-window, from 165 to 70
   * for token-bucket, and to 57 for sliding-window (docs/redis.md, measured by bench/redis.js),
   * because a field carries none of a key's own costs (its dictionary entry, its TTL entry, the
   * value's object). The price is throughput: gcra, fixed-window, the buckets and
   * sliding-window run their Lua on the hash, batched, at about two thirds of the decisions per
   * second of keys of their own (0.64-0.66x in docs/bench/redis.md). A client key's limits share
   * its group's hash, so a limiter of several limits reads them with one HMGET and writes them
   * with one HSET. sliding-log limits keep keys of their own.
   * `groups` (default 4096): hashes. Keep each under Redis's `hash-max-listpack-entries` (128):
   * about (live client keys x limits per key) / 50. Changing `groups` (or turning packing on or
   * off) starts every client from empty state.
   * `seed` (default: a random one shared through Redis): the secret the group of a client key is
   * a keyed hash with, so that no client can choose many keys of one group. Without it, the
   * first process sets a random seed in `<prefix>:seed` (no TTL) and every process reads it
   * once; give one (the same in every process) where Redis may evict or lose keys. Changing it
   * starts every client from empty state.
   * @default false
   */
  packed?: false | { groups?: number; seed?: string }
}

/** RedisStoreOptions resolved: what the store reads on every call. */
export interface RedisSettings {
  /** The client behind the one interface the store uses (see client/types.ts). */
  readonly client: ScriptClient
  readonly prefix: string
  /** Scripts decide on Redis `TIME`: requests carry no `now`. */
  readonly serverTime: boolean
  /** ms added to every TTL, as the scripts take it ('0' with server time). */
  readonly toleranceMs: string
  readonly cache: BlockCache | undefined
  readonly maxPolicyScripts: number
  /** 1 on a Cluster. */
  readonly batchSize: number
  /** Hashes per limit of a packed store (see RedisStoreOptions.packed); 0: not packed. */
  readonly groups: number
  /** `packed.seed`; undefined: shared through Redis. */
  readonly seed: string | undefined
}

/** Throws unless `value` is a safe integer >= 0 (in RedisStore's words). */
function checkCount(value: unknown, name: string): void {
  checkWholeNumber(value, name, 'an integer >= 0')
}

function checkBlockCache(cache: unknown): void {
  if (cache === false) return
  if (typeof cache === 'object' && cache !== null)
    checkKnownOptions(cache, ['maxKeys'], 'RedisStore `blockCache`')
  checkPositiveInteger((cache as BlockCacheOptions).maxKeys ?? 10_000, 'blockCache.maxKeys')
}

function checkPacked(packed: unknown): void {
  if (packed === false) return
  if (typeof packed !== 'object' || packed === null) {
    invalidOption('packed', packed, 'false or { groups }')
  }
  checkKnownOptions(packed, ['groups', 'seed'], 'RedisStore `packed`')
  const { groups = 4096, seed } = packed as { groups?: unknown; seed?: unknown }
  checkPositiveInteger(groups, 'packed.groups')
  if (seed !== undefined && (typeof seed !== 'string' || seed === '')) {
    invalidOption('packed.seed', seed, 'a non-empty string')
  }
}

/**
 * RedisStore's options, declared once (in the order they are checked; `client` is checked
 * right after, by what it is made into).
 */
export const REDIS_OPTIONS = declareOptions<RedisStoreOptions>('RedisStore', {
  client: { doc: "the application's Redis client (ioredis, iovalkey, node-redis, @upstash/redis)" },
  time: {
    doc: "whose clock decides: 'server' (Redis TIME) or 'client'",
    default: 'server',
    orNull: true,
    check: (time, name) => checkOneOf(time, name, ['server', 'client']),
  },
  clockToleranceMs: {
    doc: "time: 'client' only: how far the app servers' clocks may disagree (ms)",
    default: 1000,
    orNull: true,
    check: checkCount,
  },
  blockCache: {
    doc: 'keys known to be over their limit answered locally, or false',
    default: {},
    orNull: true,
    check: checkBlockCache,
  },
  policyScripts: {
    doc: 'most configurations (one policy, or a limiter of several) with a Lua script of their own',
    default: 100,
    orNull: true,
    check: checkCount,
  },
  batchSize: {
    doc: 'most consumes sent to Redis in one script call',
    default: 32,
    orNull: true,
    check: checkPositiveInteger,
  },
  packed: {
    doc: 'state packed in hashes: false or { groups, seed }',
    default: false,
    orNull: true,
    check: checkPacked,
  },
  prefix: { doc: 'first part of every key', default: 'sluice', orNull: true, check: checkPrefix },
})

/** What was passed as `client`: objects by their class, a client being one big object. */
function describeClient(client: unknown): string {
  if (typeof client !== 'object' || client === null) return describeValue(client)
  const name = (client as { constructor?: { name?: unknown } }).constructor?.name
  return `an object (${typeof name === 'string' && name !== '' ? name : 'no class'}) with neither evalshaBuffer, evalSha nor createScript`
}

/** Checks every option (a ConfigError names the first bad one) and applies the defaults. */
export function resolveRedisOptions(options: RedisStoreOptions): RedisSettings {
  if (options === null || typeof options !== 'object') {
    throw new ConfigError(`RedisStore options must be an object; got ${describeValue(options)}`)
  }
  const given = REDIS_OPTIONS.resolve(options)
  const client = toScriptClient(given.client)
  if (client === undefined) {
    throw new ConfigError(
      `\`client\` must be an ioredis or iovalkey Redis or Cluster client, a node-redis client or cluster, or an @upstash/redis Redis; got ${describeClient(options.client)}`,
    )
  }
  const serverTime = given.time === 'server'
  const cache = given.blockCache!
  const packed = given.packed!
  const groups = packed === false ? 0 : (packed.groups ?? 4096)
  const seed = packed === false ? undefined : packed.seed
  return {
    groups,
    seed,
    client,
    prefix: given.prefix!,
    serverTime,
    toleranceMs: serverTime ? '0' : String(given.clockToleranceMs),
    cache: cache === false ? undefined : new BlockCache(cache.maxKeys ?? 10_000),
    maxPolicyScripts: given.policyScripts!,
    batchSize: client.isCluster || client.perRequest === true ? 1 : given.batchSize!,
  }
}
