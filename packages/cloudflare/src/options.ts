/**
 * Owns DurableObjectStore's options: their documentation and defaults, checked and resolved
 * once.
 */
import { BlockCache, ConfigError, invalidOption } from '@sluice/core/web'

/** An id of a Durable Object (Cloudflare's DurableObjectId). */
export type DurableObjectIdLike = object

/** What the store calls on an object: one POST per call. */
export interface DurableObjectStubLike {
  fetch(input: string, init: { method: string; body: string }): Promise<Response>
}

/** A Durable Object namespace binding (Cloudflare's DurableObjectNamespace), `env.<binding>`. */
export interface DurableObjectNamespaceLike {
  idFromName(name: string): DurableObjectIdLike
  get(id: DurableObjectIdLike): DurableObjectStubLike
}

export interface DurableObjectStoreOptions {
  /**
   * The namespace of SluiceLimiterObject, from the Worker's `env` (the binding named in
   * wrangler.toml). Required; `DurableObjectStore.fromEnv(env, name)` names the binding in
   * the error when it is missing.
   */
  namespace: DurableObjectNamespaceLike
  /**
   * Objects the keys are spread over (a key, with every policy of its requests, always goes to
   * the same one, by a stable hash). One object runs one call at a time: more objects, more
   * decisions per second. Changing it moves keys to other objects, which start them empty.
   * @default 32
   */
  objects?: number
  /**
   * First part of every object's name (`<name>:<index>`): limiters with different names share
   * no state.
   * @default 'sluice'
   */
  name?: string
  /**
   * Whose clock decides. `'object'`: the Durable Object's, so Workers in every location agree;
   * a consume then says when the object charged (`StoreResult.at`), so a late reply's refund
   * lands there. `'client'`: the limiter's clock (tests with a fake clock).
   * @default 'object'
   */
  time?: 'object' | 'client'
  /**
   * Keys known to be over their limit are answered in this isolate, without a subrequest, until
   * their retry time (`maxKeys`: most keys remembered, least recently used out first). `false`
   * turns it off.
   * @default { maxKeys: 10_000 }
   */
  blockCache?: { maxKeys?: number } | false
}

export interface DurableObjectSettings {
  readonly namespace: DurableObjectNamespaceLike
  readonly objects: number
  readonly name: string
  readonly objectTime: boolean
  readonly cache: BlockCache | undefined
}

const KNOWN = new Set(['namespace', 'objects', 'name', 'time', 'blockCache'])

/** Checks every option (a ConfigError names the first bad one) and applies the defaults. */
export function resolveDurableObjectOptions(
  options: DurableObjectStoreOptions,
  binding = 'namespace',
): DurableObjectSettings {
  if (options === null || typeof options !== 'object') {
    invalidOption('options', options, 'an object')
  }
  for (const name of Object.keys(options)) {
    if (!KNOWN.has(name)) throw new ConfigError(`unknown option \`${name}\` for DurableObjectStore`)
  }
  const namespace = options.namespace as Partial<DurableObjectNamespaceLike> | undefined
  if (
    namespace === null ||
    typeof namespace !== 'object' ||
    typeof namespace.idFromName !== 'function' ||
    typeof namespace.get !== 'function'
  ) {
    throw new ConfigError(
      `\`${binding}\` must be a Durable Object namespace binding (a [[durable_objects.bindings]] entry in wrangler.toml for class SluiceLimiterObject); got ${namespace === undefined ? 'undefined' : typeof namespace}`,
    )
  }
  const objects = options.objects ?? 32
  if (!Number.isSafeInteger(objects) || objects < 1) {
    invalidOption('objects', objects, 'a positive integer')
  }
  const name = options.name ?? 'sluice'
  if (typeof name !== 'string' || name === '') invalidOption('name', name, 'a non-empty string')
  const time = options.time ?? 'object'
  if (time !== 'object' && time !== 'client') invalidOption('time', time, "'object' or 'client'")
  const cache = options.blockCache ?? {}
  if (cache !== false && (cache === null || typeof cache !== 'object')) {
    invalidOption('blockCache', cache, 'false or { maxKeys }')
  }
  const maxKeys = cache === false ? 0 : (cache.maxKeys ?? 10_000)
  if (cache !== false && (!Number.isSafeInteger(maxKeys) || maxKeys < 1)) {
    invalidOption('blockCache.maxKeys', maxKeys, 'a positive integer')
  }
  return {
    namespace: namespace as DurableObjectNamespaceLike,
    objects,
    name,
    objectTime: time === 'object',
    cache: cache === false ? undefined : new BlockCache(maxKeys),
  }
}
