/**
 * Owns DurableObjectStore: the Store contract over SluiceLimiterObject (limiter-object.ts), one
 * POST to one object per call, the object chosen by a stable hash of the key.
 */
import {
  ConfigError,
  StoreError,
  ROWS,
  type BlockCache,
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
  /**
   * With time: 'object', the object's clock decides: a consume's result says when it charged
   * (`at`), and a refund with `storeClock` is decided at its `now` on that clock.
   */
  readonly ownClock: boolean
  private readonly namespace: DurableObjectNamespaceLike
  private readonly objects: number
  private readonly name: string
  private readonly ids: (DurableObjectIdLike | undefined)[]
  private readonly cache: BlockCache | undefined

  constructor(options: DurableObjectStoreOptions) {
    const settings = resolveDurableObjectOptions(options)
    this.namespace = settings.namespace
    this.objects = settings.objects
    this.name = settings.name
    this.ownClock = settings.objectTime
    this.ids = new Array<DurableObjectIdLike | undefined>(settings.objects)
    this.cache = settings.cache
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

  /** A log (sliding-log) above MAX_LOG_LIMIT would not fit one storage value. */
  checkPolicy(policy: Policy): void {
    if (ROWS[policy.algorithm].state === 'log' && policy.limit > MAX_LOG_LIMIT) {
      throw new ConfigError(
        `\`limit\` must be at most ${MAX_LOG_LIMIT} for ${policy.algorithm} on DurableObjectStore (a Durable Object stores at most 128 KiB per value); got ${policy.limit}`,
      )
    }
  }

  /** A cost-1 request of a key known to be over its limit is answered here (blockCache). */
  async consume(request: StoreRequest): Promise<StoreResult> {
    const cache = this.cache
    // Reservations are admitted where a plain request is refused: never from the cache.
    if (cache === undefined || request.cost !== 1 || request.maxDelayMs! > 0) {
      const answer = await this.call('consume', request)
      // Admitted (a reservation) where a cached cost-1 request is refused: that entry no longer
      // tells the truth.
      if (cache !== undefined && answer.outcomes?.[0]?.allowed === true) cache.forget(request.key)
      return resultOf(answer)
    }
    const local = this.ownClock ? Date.now() : request.now
    const signature = signatureOf(request)
    const cached = cache.get(request.key, signature, local)
    if (cached !== undefined) return { outcomes: cached }
    const answer = await this.call('consume', request)
    const outcomes = answer.outcomes ?? []
    if (!outcomes[0]?.allowed) cache.remember(request.key, signature, local, outcomes)
    else if (request.keys !== undefined) cache.forget(request.key)
    return resultOf(answer)
  }

  async peek(request: StoreRequest): Promise<StoreResult> {
    return { outcomes: (await this.call('peek', request)).outcomes ?? [] }
  }

  async refund(request: StoreRefund): Promise<void> {
    this.cache?.forget(request.key)
    await this.call('refund', request)
  }

  async penalize(request: StoreRequest): Promise<void> {
    this.cache?.forget(request.key)
    await this.call('penalize', request)
  }

  async block({ key, until, now }: StoreBlock): Promise<void> {
    this.cache?.forget(key)
    // The object decides on its own clock: the block's length, not its end, is what holds.
    const end = this.ownClock ? Date.now() + (until - now) : until
    await this.call('block', { key, policies: [], cost: 0, now, until: end })
  }

  async reset(key: string, policies: readonly Policy[], keys?: readonly string[]): Promise<void> {
    this.cache?.forget(key)
    await this.call('reset', { key, policies, keys, cost: 0, now: 0 })
  }

  /** The object a key's calls go to: `<name>:<hash(key) mod objects>`. */
  private objectOf(key: string): DurableObjectIdLike {
    const index = hash(key) % this.objects
    return (this.ids[index] ??= this.namespace.idFromName(`${this.name}:${index}`))
  }

  private async call(op: Op, request: Omit<Call, 'op' | 'objectTime'>): Promise<Answer> {
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
    return answer
  }
}

/** A consume's answer as a StoreResult: `at` when the object's clock charged. */
function resultOf({ outcomes = [], at }: Answer): StoreResult {
  return at === undefined ? { outcomes } : { outcomes, at }
}

/** Which policies (and rule keys) a cached answer is for: a changed limit asks the object. */
function signatureOf({ policies, keys }: StoreRequest): string {
  const limits = policies.map((p) => `${p.id}/${p.limit}/${p.burst}`).join('|')
  return keys === undefined ? limits : `${limits}\u0000${keys.join('\u0000')}`
}
