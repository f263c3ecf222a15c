/**
 * Owns RedisStore: the Store contract over any Redis client (ioredis, iovalkey, node-redis;
 * standalone, Sentinel, Cluster): which script each operation runs and with which arguments,
 * and the block cache in front of it. Options: options.ts; the clients: client/; plans and
 * per-policy scripts: plan.ts; batches: batch.ts; replies: replies.ts.
 */
import type {
  Policy,
  PolicyOutcome,
  Store,
  StoreBlock,
  StoreRefund,
  StoreRequest,
  StoreResult,
} from '@sluice/core'
import type { BlockCache, ReplyShape } from '@sluice/core/web'
import { Batcher } from './batch'
import { ChargeTimes } from './charge-times'
import type { ScriptClient } from './client/types'
import { evaluate } from './evaluate'
import { RedisSlots } from './slots'
import { keyStem } from './keys'
import { genericBatchOf, SCRIPTS, type LuaScript } from './lua'
import { resolveRedisOptions, type RedisStoreOptions } from './options'
import {
  Planner,
  stateKey,
  GenericBatches,
  type LoadedScript,
  type Plan,
  type PolicyScript,
} from './plan'
import type { Route } from './route'
import { asResult, flatOutcomes, parseOutcomes } from './replies'
import { randomToken } from './web-crypto'
import { CasRunner } from './cas/runner'
import { KeyStorage, PackedStorage } from './cas/storage'
import { pushDriverArgs, pushOwnArgs, type ArgSettings, type Op } from './script-args'
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
  /** What the scripts' ARGV carry of the settings (script-args.ts). */
  private readonly argSettings: ArgSettings
  private readonly cache: BlockCache | undefined
  private readonly planner: Planner
  private readonly batcher: Batcher
  private readonly batchSize: number
  /** Sliding-log members are `<instance>:<counter>.<n>`: unique per request across processes. */
  /** Slots of `concurrency` limits (slots.ts). */
  readonly slots: RedisSlots
  private readonly instance = randomToken(6)
  private requests = 0
  /** The shared scripts, each with whether this store has sent it yet (see evaluate). */
  private readonly loaded = new Map<LuaScript, LoadedScript>()
  /** Plans with a wide policy, on keys of their own (see cas/runner.ts). */
  private readonly wide: CasRunner
  /** A packed store's calls (RedisStoreOptions.packed); undefined when not packed. */
  private readonly packed: PackedLayout | undefined
  /** The batch forms of the generic scripts this store has run. */
  private readonly genericBatches = new GenericBatches()
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
    this.argSettings = { serverTime: settings.serverTime, toleranceMs: settings.toleranceMs }
    this.cache = settings.cache
    this.slots = new RedisSlots(this.client, this.prefix, this.serverTime)
    this.batchSize = settings.batchSize
    this.planner = new Planner(settings.toleranceMs, settings.maxPolicyScripts, settings.groups > 0)
    this.batcher = new Batcher({
      // A full batch is written at once (see ScriptClient.direct).
      client: this.client.direct ?? this.client,
      batchSize: settings.batchSize,
      serverTime: settings.serverTime,
      blocks: this.blocks,
      requestId: (plan) => this.requestId(plan),
      runAlone: (e) =>
        e.call !== undefined
          ? this.evaluateScript(e.plan, e.call.script, e.call.args, e.request, 'c')
          : e.fields === undefined
            ? this.runAlone(e.plan, e.own, e.key, e.block, e.request, 'c', e.extra)
            : (this.packed as PackedLayout).runAlone(e),
    })
    const slack = Number(settings.toleranceMs)
    this.wide = new CasRunner(new KeyStorage(this.client), settings.serverTime, slack)
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
              batches: (request) => this.batches(request),
              toleranceMs: settings.toleranceMs,
              runScript: (plan, script, args, request, op) =>
                this.runScript(plan, script, args, request, op),
            },
            new CasRunner(new PackedStorage(this.client), settings.serverTime, slack),
          )
        : undefined
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
    if (this.cache === undefined) return sent.then(asResult)
    return sent.then((outcomes) => {
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
      return asResult(outcomes)
    })
  }

  async peek(request: StoreRequest): Promise<StoreResult> {
    const plan = this.planner.plan(request.policies)
    return { outcomes: await this.run(plan, request, 'p', '', plan.decide) }
  }

  /** With `at`: a refund, in the flat script where there is one. Without: a reward. */
  async refund(request: StoreRefund): Promise<void> {
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
    this.cache?.forget(request.key)
    const plan = this.planner.plan(request.policies)
    await this.run(plan, request, 'x', this.requestId(plan), plan.adjust)
  }

  /** Sets (or, with until <= now, lifts) the key's block: one round trip, the block script. */
  async block({ key, until, now }: StoreBlock): Promise<void> {
    this.cache?.forget(key)
    // A packed store keeps sliding-log limits in keys of their own (see run): both blocks.
    await Promise.all([this.packed?.block(key, until, now), this.blockKey(key, until, now)])
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
   * Runs an operation on its route (route.ts): by the layout, the one place a decision's path is
   * chosen. Not async: the callers are, and one promise per call fewer shows in the profile.
   */
  private run(
    plan: Plan,
    request: StoreRequest,
    op: Op,
    extra: string,
    route: Route,
  ): Promise<PolicyOutcome[]> {
    switch (route.layout) {
      case 'packed':
        return (this.packed as PackedLayout).run(plan, route, request, op, extra)
      case 'wide':
        return route.script !== undefined
          ? this.runKeys(plan, route.script, request, op, extra, ':v')
          : this.runWide(plan, request, op)
      case 'keys':
        // A flat route runs the policy's own script while it has one.
        return route.engine === 'flat' && plan.own !== undefined
          ? this.runOwn(plan, plan.own, request, op, extra)
          : this.runKeys(plan, route.script as LuaScript, request, op, extra, '')
    }
  }

  /** Core's transitions by compare-and-set, on state keys of their own ending in `:v`. */
  private runWide(plan: Plan, request: StoreRequest, op: Op): Promise<PolicyOutcome[]> {
    const stem = keyStem(this.prefix, request.key)
    const places = plan.ids.map((id, i) => ({
      key: stateKey(stem, request.keys, i, id) + ':v',
      field: '',
    }))
    return this.wide.run(places, { key: stem + 'b', field: '' }, plan.policies, request, op)
  }

  /** A shared script on keys of their own (ending in `suffix`): the driver's KEYS and ARGV. */
  private runKeys(
    plan: Plan,
    script: LuaScript,
    request: StoreRequest,
    op: Op,
    extra: string,
    suffix: string,
  ): Promise<PolicyOutcome[]> {
    const stem = keyStem(this.prefix, request.key)
    const n = plan.ids.length
    const keys = request.keys
    const declared = this.client.isCluster ? n : n + 1
    // The state keys, then the key's block (see lua/driver.ts for why not on a Cluster).
    const args: string[] = [script.sha, String(declared)]
    if (keys === undefined) for (const id of plan.ids) args.push(stem + id + suffix)
    else for (let i = 0; i < n; i++) args.push(stateKey(stem, keys, i, plan.ids[i]) + suffix)
    if (declared > n) args.push(stem + 'b')
    pushDriverArgs(args, request, op, extra, this.argSettings)
    for (const a of plan.args) args.push(a)
    return this.runScript(plan, script, args, request, op)
  }

  /**
   * One call of a script with its whole command (`args`: sha, key count, KEYS, ARGV); a consume
   * through a generic script joins the batch of its batch form (GenericBatches in plan.ts).
   */
  private runScript(
    plan: Plan,
    script: LuaScript,
    args: string[],
    request: StoreRequest,
    op: Op,
  ): Promise<PolicyOutcome[]> {
    const own = op === 'c' && this.batches(request) ? this.genericBatches.of(script) : undefined
    if (own !== undefined) {
      return new Promise((resolve, reject) => {
        const call = { script, args }
        this.batcher.enqueue({
          plan,
          own,
          key: '',
          block: undefined,
          call,
          request,
          extra: '',
          resolve,
          reject,
        })
      })
    }
    return this.evaluateScript(plan, script, args, request, op)
  }

  /** One call of a script, alone (see runScript), and its outcomes. */
  private evaluateScript(
    plan: Plan,
    script: LuaScript,
    args: string[],
    request: StoreRequest,
    op: Op,
  ): Promise<PolicyOutcome[]> {
    return evaluate(this.client, this.loaded.get(script) as LoadedScript, args, (reply) => {
      if (op === 'r' || op === 'x') return []
      // A generic script (one with a batch form) replies per policy; a flat one, one integer.
      if (plan.flat !== undefined && genericBatchOf(script) === undefined) {
        return flatOutcomes(plan.flat, reply, plan.policies[0], request, this.serverTime)
      }
      return parseOutcomes(reply, plan, request, this.serverTime)
    })
  }

  /** Whether a consume through a policy's own script joins a batch (see batchSize). */
  private batches(request: StoreRequest): boolean {
    return this.batchSize > 1 && !(request.maxDelayMs! > 0)
  }

  /**
   * A flat operation ('c', 'p', 'r') through the policy's own script. A plain consume joins
   * the batch of its script (see batchSize); the rest go alone.
   */
  private runOwn(
    plan: Plan,
    own: PolicyScript,
    request: StoreRequest,
    op: Op,
    extra: string,
  ): Promise<PolicyOutcome[]> {
    const stem = keyStem(this.prefix, request.key)
    const key =
      request.keys === undefined ? stem + plan.ids[0] : stateKey(stem, request.keys, 0, plan.ids[0])
    // Declared, except on a Cluster (see lua/driver.ts), which runs no batches.
    const block = this.client.isCluster ? undefined : stem + 'b'
    if (op === 'c' && this.batches(request)) {
      return new Promise((resolve, reject) => {
        this.batcher.enqueue({ plan, own, key, block, request, extra, resolve, reject })
      })
    }
    return this.runAlone(plan, own, key, block, request, op, extra)
  }

  /** EVALSHA <sha> 2 <key> <block> (1 <key> on a Cluster), then the ARGV (pushOwnArgs). */
  private runAlone(
    plan: Plan,
    own: PolicyScript,
    key: string,
    block: string | undefined,
    request: StoreRequest,
    op: Op,
    extra: string,
  ): Promise<PolicyOutcome[]> {
    const args = block === undefined ? [own.sha, '1', key] : [own.sha, '2', key, block]
    pushOwnArgs(args, request, op, extra, this.serverTime)
    return evaluate(this.client, own, args, (reply) =>
      op === 'r'
        ? []
        : flatOutcomes(plan.flat as ReplyShape, reply, plan.policies[0], request, this.serverTime),
    )
  }
}
