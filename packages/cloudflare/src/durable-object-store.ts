/**
 * Owns DurableObjectStore: the Store contract over SluiceLimiterObject (limiter-object.ts), one
 * POST to one object per call, the object chosen by a stable hash of the key.
 */
import {
  ConfigError,
  StoreError,
  type Policy,
  type Store,
  type StoreBlock,
  type StoreRefund,
  type StoreRequest,
  type StoreResult,
} from '@sluice/core/web'
import {
  resolveDurableObjectOptions,
  type DurableObjectIdLike,
  type DurableObjectNamespaceLike,
  type DurableObjectStoreOptions,
} from './options'
import { decode, encode, type Answer, type Call, type Op } from './wire'

/**
 * A sliding-log state holds one number per admitted request of the window, and a Durable
 * Object's storage value at most 128 KiB: about 16,000 numbers.
 */
const MAX_LOG_LIMIT = 10_000

/** FNV-1a (32 bits) of the key's UTF-16 code units: the same object for a key everywhere. */
function hash(key: string): number {
  let h = 0x811c9dc5
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return h >>> 0
}

/**
 * Sluice's Store on Cloudflare Durable Objects: shared, exact limits for Workers, whatever
 * isolate or location a request lands in. Each key (every policy of its requests together) is
 * routed to one of `objects` SluiceLimiterObject instances, which decides with core's
 * transitions and keeps the state in its storage: one subrequest per decision.
 */
export class DurableObjectStore implements Store {
  /** With time: 'object', the object's clock decides (late charges are refunded at arrival). */
  readonly ownClock: boolean
  private readonly namespace: DurableObjectNamespaceLike
  private readonly objects: number
  private readonly name: string
  private readonly ids: (DurableObjectIdLike | undefined)[]

  constructor(options: DurableObjectStoreOptions) {
    const settings = resolveDurableObjectOptions(options)
    this.namespace = settings.namespace
    this.objects = settings.objects
    this.name = settings.name
    this.ownClock = settings.objectTime
    this.ids = new Array<DurableObjectIdLike | undefined>(settings.objects)
  }

  /**
   * The store on the namespace bound as `env[binding]`; a ConfigError names the binding when
   * the Worker has none of that name.
   */
  static fromEnv(
    env: object,
    binding = 'SLUICE_LIMITER',
    options: Omit<DurableObjectStoreOptions, 'namespace'> = {},
  ): DurableObjectStore {
    const namespace = ((env ?? {}) as Record<string, unknown>)[
      binding
    ] as DurableObjectNamespaceLike
    resolveDurableObjectOptions({ ...options, namespace }, `env.${binding}`)
    return new DurableObjectStore({ ...options, namespace })
  }

  /** sliding-log limits above MAX_LOG_LIMIT would not fit one storage value. */
  checkPolicy(policy: Policy): void {
    if (policy.algorithm === 'sliding-log' && policy.limit > MAX_LOG_LIMIT) {
      throw new ConfigError(
        `\`limit\` must be at most ${MAX_LOG_LIMIT} for sliding-log on DurableObjectStore (a Durable Object stores at most 128 KiB per value); got ${policy.limit}`,
      )
    }
  }

  async consume(request: StoreRequest): Promise<StoreResult> {
    return { outcomes: await this.call('consume', request) }
  }

  async peek(request: StoreRequest): Promise<StoreResult> {
    return { outcomes: await this.call('peek', request) }
  }

  async refund(request: StoreRefund): Promise<void> {
    await this.call('refund', request)
  }

  async penalize(request: StoreRequest): Promise<void> {
    await this.call('penalize', request)
  }

  async block({ key, until, now }: StoreBlock): Promise<void> {
    // The object decides on its own clock: the block's length, not its end, is what holds.
    const end = this.ownClock ? Date.now() + (until - now) : until
    await this.call('block', { key, policies: [], cost: 0, now, until: end })
  }

  async reset(key: string, policies: readonly Policy[], keys?: readonly string[]): Promise<void> {
    await this.call('reset', { key, policies, keys, cost: 0, now: 0 })
  }

  /** The object a key's calls go to: `<name>:<hash(key) mod objects>`. */
  private objectOf(key: string): DurableObjectIdLike {
    const index = hash(key) % this.objects
    return (this.ids[index] ??= this.namespace.idFromName(`${this.name}:${index}`))
  }

  private async call(op: Op, request: Omit<Call, 'op' | 'objectTime'>): Promise<PolicyOutcomes> {
    const call: Call = { ...request, op, objectTime: this.ownClock }
    let answer: Answer
    try {
      // A stub per call: Workers tie some objects to the request that made them.
      const stub = this.namespace.get(this.objectOf(call.key))
      const response = await stub.fetch('https://sluice.internal/', {
        method: 'POST',
        body: encode(call),
      })
      answer = decode<Answer>(await response.text())
    } catch (error) {
      throw new StoreError(`DurableObjectStore ${op} failed: ${String(error)}`, { cause: error })
    }
    if (answer.error !== undefined) {
      throw new StoreError(`DurableObjectStore ${op} failed in the object: ${answer.error}`)
    }
    return answer.outcomes ?? []
  }
}

type PolicyOutcomes = NonNullable<Answer['outcomes']>
