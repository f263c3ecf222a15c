/**
 * Owns DurableObjectStore's options: their documentation and defaults, checked and resolved
 * once.
 */
import {
  BlockCache,
  checkKnownOptions,
  checkOneOf,
  checkPositiveInteger,
  ConfigError,
  declareOptions,
  invalidOption,
} from '@sluice/core/web'

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
   * At most 65,536.
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

/** Throws unless `cache` is false or `{ maxKeys }` with a positive integer. */
function checkBlockCache(cache: unknown, name: string): void {
  if (cache === false) return
  if (cache === null || typeof cache !== 'object')
    invalidOption(name, cache, 'false or { maxKeys }')
  checkKnownOptions(cache, ['maxKeys'], 'DurableObjectStore `blockCache`')
  const { maxKeys } = cache as { maxKeys?: unknown }
  if (maxKeys !== undefined) checkPositiveInteger(maxKeys, `${name}.maxKeys`)
}

/**
 * DurableObjectStore's options, declared once (in the order they are checked; `namespace` is
 * checked right after, in words that name the binding). null takes the default, as it always
 * has.
 */
/**
 * The most objects a store spreads keys over: far past what one namespace needs (each object
 * decides thousands of calls a second), and the store keeps an id slot per object.
 */
export const MAX_OBJECTS = 65_536

function checkObjects(value: unknown, option: string): number {
  const objects = checkPositiveInteger(value, option, `a whole number from 1 to ${MAX_OBJECTS}`)
  if (objects > MAX_OBJECTS) invalidOption(option, value, `a whole number from 1 to ${MAX_OBJECTS}`)
  return objects
}

export const DURABLE_OBJECT_OPTIONS = declareOptions<DurableObjectStoreOptions>(
  'DurableObjectStore',
  {
    namespace: { doc: 'the namespace binding of SluiceLimiterObject, from env' },
    objects: {
      doc: 'objects the keys are spread over',
      default: 32,
      orNull: true,
      check: checkObjects,
    },
    name: {
      doc: "first part of every object's name",
      default: 'sluice',
      orNull: true,
      check: (name, option) => {
        if (typeof name !== 'string' || name === '') {
          invalidOption(option, name, 'a non-empty string')
        }
      },
    },
    time: {
      doc: "whose clock decides: 'object' (the Durable Object's) or 'client'",
      default: 'object',
      orNull: true,
      check: (time, option) => checkOneOf(time, option, ['object', 'client']),
    },
    blockCache: {
      doc: 'keys known to be over their limit answered in the isolate, or false',
      default: {},
      orNull: true,
      check: checkBlockCache,
    },
  },
)

/** Whether `value` has the methods the store calls on a namespace. */
function isNamespace(value: unknown): value is DurableObjectNamespaceLike {
  const namespace = value as Partial<DurableObjectNamespaceLike> | null | undefined
  return (
    typeof namespace === 'object' &&
    namespace !== null &&
    typeof namespace.idFromName === 'function' &&
    typeof namespace.get === 'function'
  )
}

/**
 * Checks every option (a ConfigError names the first bad one) and applies the defaults.
 * `binding`: how an error names `namespace` (`env.<binding>` from fromEnv).
 */
export function resolveDurableObjectOptions(
  options: DurableObjectStoreOptions,
  binding = 'namespace',
): DurableObjectSettings {
  if (options === null || typeof options !== 'object') {
    invalidOption('options', options, 'an object')
  }
  const given = DURABLE_OBJECT_OPTIONS.resolve(options)
  const namespace: unknown = given.namespace
  if (!isNamespace(namespace)) {
    throw new ConfigError(
      `\`${binding}\` must be a Durable Object namespace binding (a [[durable_objects.bindings]] entry in wrangler.toml for class SluiceLimiterObject); got ${namespace === undefined ? 'undefined' : typeof namespace}`,
    )
  }
  const cache = given.blockCache!
  return {
    namespace,
    objects: given.objects!,
    name: given.name!,
    objectTime: given.time === 'object',
    cache: cache === false ? undefined : new BlockCache(cache.maxKeys ?? 10_000),
  }
}
