/**
 * Owns RedisStore: the Store contract over any Redis client (ioredis, iovalkey, node-redis;
 * standalone, Sentinel, Cluster): which script each operation runs and with which arguments,
 * and the block cache in front of it. Options: options.ts; the clients: client/; plans and
 * per-policy scripts: plan.ts; batches: batch.ts; replies: replies.ts.
 */
import type {
  Policy,
  Store,
  StoreBlock,
  StoreRefund,
  StoreRequest,
  StoreResult,
} from '@sluice/core'
import type { BlockCache } from '@sluice/core/web'
import { Batcher } from './batch'
import { ChargeTimes } from './charge-times'
import type { ScriptClient } from './client/types'
import { evaluate } from './evaluate'
import { enginesOf, type Engines } from './engines'
import { KeyCalls } from './key-calls'
import { RedisSlots } from './slots'
import { keyStem } from './keys'
import { SCRIPTS, type LuaScript } from './lua'
import { resolveRedisOptions, type RedisStoreOptions } from './options'
import { Planner, stateKey, type LoadedScript, type Plan } from './plan'
import type { Route } from './route'
import { randomToken } from './web-crypto'
import { CasRunner } from './cas/runner'
import { KeyStorage, PackedStorage } from './cas/storage'
import type { Op } from './script-args'
import { PackedLayout } from './packed-layout'

export type { BlockCacheOptions, RedisStoreOptions } from './options'

/**
 * The Store contract on Redis: every algorithm as one Lua script (see ./lua), all policies of
 * a key decided in one EVALSHA, at most one round trip per decision (the consumes of one
 * event-loop turn share one, see batchSize). Works with ioredis `enableAutoPipelining` and with
 * Redis Cluster (every key of one client key shares a hash tag), through ioredis, iovalkey or
 * node-redis.
 */
export class RedisStore implements Store {
  private readonly client: ScriptClient
  private readonly prefix: string
  /** `<prefix>:blocks`, alive while any key of the prefix may be blocked (see lua/block.ts). */
  private readonly blocks: string
  private readonly serverTime: boolean
  /** With server time the scripts decide on Redis `TIME`, not the request's `now`. */
  readonly ownClock: boolean
  private readonly toleranceMs: string
  private readonly cache: BlockCache | undefined
  private readonly planner: Planner
  private readonly batcher: Batcher
  /** Sliding-log members are `<instance>:<counter>.<n>`: unique per request across processes. */
  /** Slots of `concurrency` limits (slots.ts). */
  readonly slots: RedisSlots
  private readonly instance = randomToken(6)
  private requests = 0
  /** The shared scripts, each with whether this store has sent it yet (see evaluate). */
  private readonly loaded = new Map<LuaScript, LoadedScript>()
  /** The keys and wide layouts' calls (key-calls.ts). */
  private readonly keys: KeyCalls
  /** A packed store's calls (RedisStoreOptions.packed); undefined when not packed. */
  private readonly packed: PackedLayout | undefined
  /** Every engine, by name (engines/index.ts). */
  private readonly engines: Engines
  /** With server time: when Redis logged recent sliding-log charges, for their refunds. */
  private readonly charges = new ChargeTimes()

  constructor(options: RedisStoreOptions) {
    const settings = resolveRedisOptions(options)
    this.client = settings.client
    this.prefix = settings.prefix
    this.blocks = `${settings.prefix}:blocks`
    this.serverTime = settings.serverTime
    this.ownClock = settings.serverTime
    this.toleranceMs = settings.toleranceMs
    this.cache = settings.cache
    this.slots = new RedisSlots(this.client, this.prefix, this.serverTime)
    this.planner = new Planner(settings.toleranceMs, settings.maxPolicyScripts, settings.groups > 0)
    this.batcher = new Batcher({
      // A full batch is written at once (see ScriptClient.direct).
      client: this.client.direct ?? this.client,
      batchSize: settings.batchSize,
      serverTime: settings.serverTime,
      blocks: this.blocks,
      requestId: (plan) => this.requestId(plan),
      runAlone: (e) =>
        e.call === undefined && e.fields !== undefined
          ? (this.packed as PackedLayout).runAlone(e)
          : this.keys.runEntry(e),
    })
    const slack = Number(settings.toleranceMs)
    this.keys = new KeyCalls({
      client: this.client,
      prefix: this.prefix,
      serverTime: this.serverTime,
      argSettings: { serverTime: settings.serverTime, toleranceMs: settings.toleranceMs },
      batchSize: settings.batchSize,
      batcher: this.batcher,
      loaded: this.loaded,
      wide: new CasRunner(new KeyStorage(this.client), settings.serverTime, slack),
    })
    this.packed =
      settings.groups > 0
        ? new PackedLayout(
            {
              prefix: settings.prefix,
              groups: settings.groups,
              seed: settings.seed,
              client: this.client,
              serverTime: settings.serverTime,
              slackMs: slack,
              isCluster: this.client.isCluster,
              batcher: this.batcher,
              batches: (request) => this.keys.batches(request),
              toleranceMs: settings.toleranceMs,
              runScript: (plan, script, args, request, op) =>
                this.keys.runScript(plan, script, args, request, op),
              runOwn: (plan, own, args, request, op) =>
                this.keys.evaluateOwn(plan, own, args, request, op),
            },
            new CasRunner(new PackedStorage(this.client), settings.serverTime, slack),
          )
        : undefined
    this.engines = enginesOf({ keys: this.keys, packed: this.packed })
    for (const script of Object.values(SCRIPTS)) {
      this.loaded.set(script, { lua: script.lua, sha: script.sha, sent: false })
    }
  }

  /** The scripts this store runs, by algorithm (and 'mixed'), with their SHAs. */
  static readonly scripts = SCRIPTS

  /** Keys currently answered from the block cache (for tests and metrics). */
  get blockedKeys(): number {
    return this.cache?.size ?? 0
  }

  /** Not async, like run: one promise and one async frame fewer per decision. */
  consume(request: StoreRequest): Promise<StoreResult> {
    try {
      return this.consumeFrom(this.planner.plan(request.policies), request)
    } catch (error) {
      return Promise.reject(error)
    }
  }

  private consumeFrom(plan: Plan, request: StoreRequest): Promise<StoreResult> {
    // Reservations are admitted where a plain request is rejected: never from the cache.
    const cacheable = this.cache !== undefined && request.cost === 1 && !(request.maxDelayMs! > 0)
    const local = cacheable ? (this.serverTime ? performance.now() : request.now) : 0
    const signature =
      cacheable && request.keys !== undefined
        ? `${plan.signature}\u0000${request.keys.join('\u0000')}`
        : plan.signature
    if (cacheable) {
      const cached = (this.cache as BlockCache).get(request.key, signature, local)
      if (cached !== undefined) return Promise.resolve({ outcomes: cached })
    }
    const run = this.run(plan, request, 'c', this.requestId(plan), plan.decide)
    const sent =
      this.serverTime && plan.hasLog ? run.then((o) => this.charges.admitted(request, o)) : run
    if (this.cache === undefined) return sent
    return sent.then((result) => {
      const { outcomes } = result
      // A blocked key's answer is kept too: until the block ends, unless block/reset clear it.
      if (cacheable && !outcomes[0].allowed) {
        ;(this.cache as BlockCache).remember(request.key, signature, local, outcomes)
      } else if (
        this.cache !== undefined &&
        outcomes[0].allowed &&
        (request.keys !== undefined || request.maxDelayMs! > 0)
      ) {
        // Admitted where a cached cost-1 request is refused (a reservation, or another set of
        // state keys sharing some of them): that entry no longer tells the truth.
        this.cache.forget(request.key)
      }
      return result
    })
  }

  async peek(request: StoreRequest): Promise<StoreResult> {
    this.batcher.sendPending()
    const plan = this.planner.plan(request.policies)
    // A peek counts nothing: no `at`.
    return { outcomes: (await this.run(plan, request, 'p', '', plan.decide)).outcomes }
  }

  /** With `at`: a refund, in the flat script where there is one. Without: a reward. */
  async refund(request: StoreRefund): Promise<void> {
    this.batcher.sendPending()
    this.cache?.forget(request.key)
    const plan = this.planner.plan(request.policies)
    if (request.at === undefined) {
      await this.run(plan, request, 'r', '', plan.adjust)
      return
    }
    // A log's refund removes the timestamps Redis logged, at the time it logged them.
    const exact = this.serverTime && plan.hasLog ? this.charges.exact(request) : request
    const ago = Math.max(0, exact.now - (exact.at as number))
    await this.run(plan, exact, 'r', String(ago), plan.decide)
  }

  /** One round trip: the generic script's 'x' operation on every policy of the key. */
  async penalize(request: StoreRequest): Promise<void> {
    this.batcher.sendPending()
    this.cache?.forget(request.key)
    const plan = this.planner.plan(request.policies)
    await this.run(plan, request, 'x', this.requestId(plan), plan.adjust)
  }

  /** Sets (or, with until <= now, lifts) the key's block: one round trip, the block script. */
  async block({ key, until, now }: StoreBlock): Promise<void> {
    this.batcher.sendPending()
    this.cache?.forget(key)
    // A packed store keeps sliding-log limits in keys of their own (see run): both blocks. The
    // key's own first: its script keeps `<prefix>:blocks` alive, which packed batches read
    // before they look at any block field (PACKED_ANY_BLOCK in lua/flat/frame.ts).
    await this.blockKey(key, until, now)
    await this.packed?.block(key, until, now)
  }

  /** The block as a key of its own, `<prefix>:{<key>}:b`: one round trip, the block script. */
  private async blockKey(key: string, until: number, now: number): Promise<void> {
    const block = SCRIPTS.block
    // On standalone Redis also `<prefix>:blocks`, which batch scripts read (see lua/block.ts).
    const keys = this.client.isCluster
      ? ['1', keyStem(this.prefix, key) + 'b']
      : ['2', keyStem(this.prefix, key) + 'b', this.blocks]
    const args = [this.serverTime ? '' : String(now), String(until - now), this.toleranceMs]
    await evaluate(
      this.client,
      this.loaded.get(block) as LoadedScript,
      [block.sha, ...keys, ...args],
      () => undefined,
    )
    // The block script kept `<prefix>:blocks` alive at least this long: batches declare blocks.
    if (until > now) this.batcher.blocksFor(until - now)
  }

  async reset(key: string, policies: readonly Policy[], keys?: readonly string[]): Promise<void> {
    this.batcher.sendPending()
    this.cache?.forget(key)
    const plan = this.planner.plan(policies)
    const packed = this.packed !== undefined && !plan.hasLog
    const stem = keyStem(this.prefix, key)
    // A wide plan's state keys end in `:v` (see cas/runner.ts).
    const suffix = plan.wide ? ':v' : ''
    const names = packed ? [] : plan.ids.map((id, i) => stateKey(stem, keys, i, id) + suffix)
    // One DEL: the keys share a hash tag, so this is fine on a Cluster too. The block key
    // always: a packed store sets both blocks.
    await this.client.del([...names, stem + 'b'])
    await this.packed?.reset(key, plan, keys)
  }

  /** Forgets the block cache. The client belongs to the caller, who closes it. */
  close(): Promise<void> {
    this.cache?.clear()
    return Promise.resolve()
  }

  private requestId(plan: Plan): string {
    return plan.hasLog ? `${this.instance}:${(this.requests++).toString(36)}` : ''
  }

  /**
   * Runs an operation on its route (route.ts) by the route's engine (engines/index.ts). Not
   * async: the callers are, and one promise per call fewer shows in the profile.
   */
  private run(
    plan: Plan,
    request: StoreRequest,
    op: Op,
    extra: string,
    route: Route,
  ): Promise<StoreResult> {
    return this.engines[route.engine].run(plan, route, request, op, extra)
  }
}
