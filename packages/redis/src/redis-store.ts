/**
 * Owns RedisStore: the Store contract over ioredis (standalone, Sentinel, Cluster), with script
 * calls batched per event-loop turn and the block cache.
 */
import { randomBytes } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import {
  ConfigError,
  type AlgorithmName,
  type Policy,
  type PolicyOutcome,
  type Store,
  type StoreBlock,
  type StoreRefund,
  type StoreRequest,
  type StoreResult,
} from '@sluice/core'
import type { Cluster, Redis } from 'ioredis'
import { BlockCache } from './block-cache'
import { flatOutcome, type FlatKind } from './flat-outcome'
import { checkPrefix, describeValue, escapePart, keyStem } from './keys'
import { ALGORITHM_CODES, flatLua, script as luaScript, SCRIPTS, type LuaScript } from './lua'

export interface BlockCacheOptions {
  /**
   * Most keys remembered as blocked; past it the least recently used is forgotten.
   * @default 10_000
   */
  maxKeys?: number
}

export interface RedisStoreOptions {
  /** An ioredis `Redis` (standalone or Sentinel) or `Cluster` client. The store does not close it. */
  client: Redis | Cluster
  /**
   * First part of every key: `<prefix>:{<key>}:<policy id>` (with per-policy state keys
   * `<prefix>:{<key>}:<keys[i]>:<policy id>`; the key's block `<prefix>:{<key>}:b`). No braces.
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
   * Most single-policy configurations (algorithm, limit, window, burst, precision) that get a
   * Lua script of their own, with the policy written into it as constants, so a call sends only
   * the key (and what differs from the defaults: cost, time, ...). Redis keeps every script
   * loaded until SCRIPT FLUSH or a restart, hence the bound; past it, and for limiters with
   * several limits, the shared scripts take the policy as arguments. `0` turns them off.
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
}

/** A script the store runs with EVALSHA (see evaluate). */
interface LoadedScript {
  readonly lua: string
  readonly sha: string
  /** Set once it has been sent: the first call sends EVAL (which loads it), later ones EVALSHA. */
  sent: boolean
}

/** A flat script with one policy baked in (see lua/flat.ts), and its batch form. */
interface PolicyScript extends LoadedScript {
  readonly batch: LoadedScript
}

/** A consume waiting in the batch of its policy's script (see RedisStore.enqueue). */
interface BatchEntry {
  readonly plan: Plan
  readonly own: PolicyScript
  /** The state key. */
  readonly key: string
  readonly request: StoreRequest
  /** The sliding-log request id, used when it goes alone. */
  readonly extra: string
  resolve(outcomes: PolicyOutcome[]): void
  reject(error: unknown): void
}

/** What the store sends for one set of policies, worked out once per policies array. */
interface Plan {
  readonly script: LuaScript
  /** The generic script (no flat one): rewards and penalties, which flat scripts do not do. */
  readonly generic: LuaScript
  /** Five strings per policy: code, limit, windowMs, burst, precision. */
  readonly args: readonly string[]
  /** Policy ids, in order: the last part of each state key. */
  readonly ids: readonly string[]
  /** Identifies the policies for the block cache: id, limit and burst of each. */
  readonly signature: string
  readonly hasLog: boolean
  /** Set when the script is a flat one (one policy): how to read its one-integer reply. */
  readonly flat: FlatKind | undefined
  readonly policies: readonly Policy[]
  /** The one policy's own script, when it has one (see RedisStoreOptions.policyScripts). */
  readonly own: PolicyScript | undefined
}

/**
 * ioredis's EVAL and EVALSHA, which auto-pipeline like any command when the client does, in
 * their Buffer-reply form: a flat script replies with integers only (nested in arrays for a
 * batch), which need no decoding, and the string form would walk every reply element looking
 * for Buffers to turn into strings (a few percent of a decision's CPU in the profile).
 */
interface Evaluator {
  evalBuffer(...args: string[]): Promise<unknown>
  evalshaBuffer(...args: string[]): Promise<unknown>
}

type ScriptCommand = (...args: (string | number)[]) => Promise<unknown>

const KNOWN = [
  'client',
  'prefix',
  'time',
  'clockToleranceMs',
  'blockCache',
  'policyScripts',
  'batchSize',
]

const FLAT: Readonly<Partial<Record<AlgorithmName, FlatKind>>> = {
  gcra: 'meter',
  'token-bucket': 'meter',
  'leaky-bucket': 'shaping',
  'fixed-window': 'fw',
  'sliding-window': 'sw',
  'sliding-log': 'sl',
}

function scriptFor(policies: readonly Policy[]): LuaScript {
  const first: AlgorithmName = policies[0].algorithm
  if (policies.length === 1 && FLAT[first] !== undefined) {
    return SCRIPTS[`${first}:1`]
  }
  return genericFor(policies)
}

function genericFor(policies: readonly Policy[]): LuaScript {
  const first: AlgorithmName = policies[0].algorithm
  return policies.every((p) => p.algorithm === first) ? SCRIPTS[first] : SCRIPTS.mixed
}

type Op = 'c' | 'p' | 'r' | 'x'

/**
 * The Store contract on Redis: every algorithm as one Lua script (see ./lua), all policies of
 * a key decided in one EVALSHA, at most one round trip per decision (the consumes of one
 * event-loop turn share one, see batchSize). Works with ioredis `enableAutoPipelining` and with
 * Redis Cluster (every key of one client key shares a hash tag).
 */
export class RedisStore implements Store {
  private readonly client: Redis | Cluster
  private readonly prefix: string
  private readonly serverTime: boolean
  /** With server time the scripts decide on Redis `TIME`, not the request's `now`. */
  readonly ownClock: boolean
  private readonly toleranceMs: string
  private readonly cache: BlockCache | undefined
  private readonly plans = new WeakMap<readonly Policy[], Plan>()
  /** Sliding-log members are `<instance>:<counter>.<n>`: unique per request across processes. */
  private readonly instance = randomBytes(6).toString('base64url')
  private requests = 0
  private readonly commands = new Map<LuaScript, ScriptCommand>()
  private readonly maxPolicyScripts: number
  /** Per-policy scripts by configuration (see policyScript). */
  private readonly policyScripts = new Map<string, PolicyScript>()
  /** 1 on a Cluster (see RedisStoreOptions.batchSize). */
  private readonly batchSize: number
  /** Consumes waiting for the end of the turn, by script. */
  private readonly batches = new Map<PolicyScript, BatchEntry[]>()
  private flushScheduled = false

  constructor(options: RedisStoreOptions) {
    if (options === null || typeof options !== 'object') {
      throw new ConfigError(`RedisStore options must be an object; got ${describeValue(options)}`)
    }
    for (const name of Object.keys(options)) {
      if (!KNOWN.includes(name)) {
        throw new ConfigError(`unknown option \`${name}\` for RedisStore`)
      }
    }
    const client = options.client as Partial<Redis> | undefined
    if (
      typeof client !== 'object' ||
      client === null ||
      typeof client.defineCommand !== 'function'
    ) {
      throw new ConfigError(
        `\`client\` must be an ioredis Redis or Cluster client; got ${describeValue(options.client)}`,
      )
    }
    this.client = options.client
    this.prefix = checkPrefix(options.prefix ?? 'sluice')
    const time = options.time ?? 'server'
    if (time !== 'server' && time !== 'client') {
      throw new ConfigError(`\`time\` must be 'server' or 'client'; got ${describeValue(time)}`)
    }
    this.serverTime = time === 'server'
    this.ownClock = this.serverTime
    const tolerance = options.clockToleranceMs ?? 1000
    if (!Number.isSafeInteger(tolerance) || tolerance < 0) {
      throw new ConfigError(
        `\`clockToleranceMs\` must be an integer >= 0; got ${describeValue(tolerance)}`,
      )
    }
    this.toleranceMs = this.serverTime ? '0' : String(tolerance)
    const cache = options.blockCache ?? {}
    if (cache !== false) {
      const maxKeys = cache.maxKeys ?? 10_000
      if (!Number.isSafeInteger(maxKeys) || maxKeys < 1) {
        throw new ConfigError(
          `\`blockCache.maxKeys\` must be a positive integer; got ${describeValue(maxKeys)}`,
        )
      }
      this.cache = new BlockCache(maxKeys)
    }
    const policyScripts = options.policyScripts ?? 100
    if (!Number.isSafeInteger(policyScripts) || policyScripts < 0) {
      throw new ConfigError(
        `\`policyScripts\` must be an integer >= 0; got ${describeValue(policyScripts)}`,
      )
    }
    this.maxPolicyScripts = policyScripts
    const batchSize = options.batchSize ?? 32
    if (!Number.isSafeInteger(batchSize) || batchSize < 1) {
      throw new ConfigError(
        `\`batchSize\` must be a positive integer; got ${describeValue(batchSize)}`,
      )
    }
    this.batchSize = this.client.isCluster ? 1 : batchSize
    // Registered once per store; ioredis sends EVAL the first time on each connection and
    // EVALSHA after, and answers NOSCRIPT (Redis restarted or SCRIPT FLUSH) by sending EVAL
    // again. A NOSCRIPT reply means the script did not run, so nothing is counted twice.
    const commands = this.client as unknown as Record<string, ScriptCommand>
    for (const script of Object.values(SCRIPTS)) {
      if (typeof commands[script.command] !== 'function') {
        this.client.defineCommand(script.command, { lua: script.lua })
      }
      this.commands.set(script, commands[script.command].bind(this.client))
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
      return this.consumeFrom(this.plan(request.policies), request)
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
    const sent = this.run(plan, request, 'c', this.requestId(plan), plan.script)
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
      return { outcomes }
    })
  }

  async peek(request: StoreRequest): Promise<StoreResult> {
    const plan = this.plan(request.policies)
    return { outcomes: await this.run(plan, request, 'p', '', plan.script) }
  }

  /** With `at`: a refund, in the flat script where there is one. Without: a reward. */
  async refund(request: StoreRefund): Promise<void> {
    this.cache?.forget(request.key)
    const plan = this.plan(request.policies)
    if (request.at === undefined) {
      await this.run(plan, request, 'r', '', plan.generic)
      return
    }
    const ago = Math.max(0, request.now - request.at)
    await this.run(plan, request, 'r', String(ago), plan.script)
  }

  /** One round trip: the generic script's 'x' operation on every policy of the key. */
  async penalize(request: StoreRequest): Promise<void> {
    this.cache?.forget(request.key)
    const plan = this.plan(request.policies)
    await this.run(plan, request, 'x', this.requestId(plan), plan.generic)
  }

  /** Sets (or, with until <= now, lifts) the key's block: one round trip, the block script. */
  async block({ key, until, now }: StoreBlock): Promise<void> {
    this.cache?.forget(key)
    const command = this.commands.get(SCRIPTS.block) as ScriptCommand
    // On standalone Redis also `<prefix>:blocks`, which batch scripts read (see lua/block.ts).
    const keys = this.client.isCluster
      ? [1, keyStem(this.prefix, key) + 'b']
      : [2, keyStem(this.prefix, key) + 'b', `${this.prefix}:blocks`]
    await command(
      ...keys,
      this.serverTime ? '' : String(now),
      String(until - now),
      this.toleranceMs,
    )
  }

  async reset(key: string, policies: readonly Policy[], keys?: readonly string[]): Promise<void> {
    this.cache?.forget(key)
    const stem = keyStem(this.prefix, key)
    // One DEL: the keys share a hash tag, so this is fine on a Cluster too.
    await this.client.del(...policies.map((p, i) => stateKey(stem, keys, i, p.id)), stem + 'b')
  }

  /** Forgets the block cache. The client belongs to the caller, who closes it. */
  close(): Promise<void> {
    this.cache?.clear()
    return Promise.resolve()
  }

  private requestId(plan: Plan): string {
    return plan.hasLog ? `${this.instance}:${(this.requests++).toString(36)}` : ''
  }

  /** Not async: the callers are, and one promise per call fewer shows in the profile. */
  private run(
    plan: Plan,
    request: StoreRequest,
    op: Op,
    extra: string,
    script: LuaScript,
  ): Promise<PolicyOutcome[]> {
    if (plan.own !== undefined && script === plan.script) {
      return this.runOwn(plan, plan.own, request, op, extra)
    }
    const stem = keyStem(this.prefix, request.key)
    const n = plan.ids.length
    const keys = request.keys
    // The state keys; the scripts find the key's block from the first one's hash tag.
    const args: (string | number)[] = [n]
    if (keys === undefined) for (const id of plan.ids) args.push(stem + id)
    else for (let i = 0; i < n; i++) args.push(stateKey(stem, keys, i, plan.ids[i]))
    args.push(
      op,
      this.serverTime ? '' : String(request.now),
      String(request.cost),
      extra,
      this.toleranceMs,
      request.maxDelayMs! > 0 ? String(request.maxDelayMs) : '0',
    )
    for (const a of plan.args) args.push(a)
    const command = this.commands.get(script) as ScriptCommand
    return command(...args).then((reply) => {
      if (op === 'r' || op === 'x') return []
      if (script === plan.script && plan.flat !== undefined) {
        return [flatReply(plan.flat, reply, plan.policies[0], request)]
      }
      return parseOutcomes(reply, n)
    })
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
    const key =
      request.keys === undefined
        ? keyStem(this.prefix, request.key) + plan.ids[0]
        : stateKey(keyStem(this.prefix, request.key), request.keys, 0, plan.ids[0])
    if (op === 'c' && this.batchSize > 1 && !(request.maxDelayMs! > 0)) {
      return new Promise((resolve, reject) => {
        this.enqueue({ plan, own, key, request, extra, resolve, reject })
      })
    }
    return this.runAlone(plan, own, key, request, op, extra)
  }

  /**
   * EVALSHA <sha> 1 <key>, then only the ARGV up to the last one that is not its default (see
   * `inputs` in lua/flat.ts), so a consume with server time and cost 1 sends no ARGV at all.
   */
  private runAlone(
    plan: Plan,
    own: PolicyScript,
    key: string,
    request: StoreRequest,
    op: Op,
    extra: string,
  ): Promise<PolicyOutcome[]> {
    const cost = request.cost
    const maxDelayMs = request.maxDelayMs! > 0 ? (request.maxDelayMs as number) : 0
    // ARGV is extra, op, now, cost, maxDelayMs, defaults '', 'c', TIME, 1, 0: send up to the
    // last one that differs.
    const count =
      maxDelayMs > 0
        ? 5
        : cost !== 1
          ? 4
          : !this.serverTime
            ? 3
            : op !== 'c'
              ? 2
              : extra !== ''
                ? 1
                : 0
    const args = [own.sha, '1', key]
    if (count > 0) args.push(extra)
    if (count > 1) args.push(op)
    if (count > 2) args.push(this.serverTime ? '' : String(request.now))
    if (count > 3) args.push(String(cost))
    if (count > 4) args.push(String(maxDelayMs))
    return this.evaluate(own, args, (reply) =>
      op === 'r' ? [] : [flatReply(plan.flat as FlatKind, reply, plan.policies[0], request)],
    )
  }

  /**
   * Adds a consume to the batch of its script, sent when the event-loop turn ends (one timer
   * for every batch), when it is full, or when a consume at another client-time `now` comes.
   */
  private enqueue(entry: BatchEntry): void {
    let batch = this.batches.get(entry.own)
    if (batch !== undefined && !this.serverTime && batch[0].request.now !== entry.request.now) {
      this.batches.delete(entry.own)
      this.send(batch)
      batch = undefined
    }
    if (batch === undefined) {
      batch = []
      this.batches.set(entry.own, batch)
      if (!this.flushScheduled) {
        this.flushScheduled = true
        setImmediate(this.flush)
      }
    }
    batch.push(entry)
    if (batch.length >= this.batchSize) {
      this.batches.delete(entry.own)
      this.send(batch)
    }
  }

  /**
   * Sends every batch at the end of the turn, even while an earlier one awaits its reply:
   * holding them back until it came made batches twice as large but cost the server more CPU per
   * request, its event loop idle while it waited (docs/redis.md, "Batches").
   */
  private readonly flush = (): void => {
    this.flushScheduled = false
    // Entry by entry, not clear(): V8's clear() gives the map a new table and leaves the old
    // one pointing to it. The old table sits in the old generation until a major collection, so
    // every young collection took each new table, and the batches in it, for live and promoted
    // them: about 1 MB per scavenge under load, a few percent of the server's CPU in GC.
    for (const [own, batch] of this.batches) {
      this.batches.delete(own)
      this.send(batch)
    }
  }

  /**
   * One EVALSHA of the batch script for every consume of the batch (one alone goes through the
   * plain script): KEYS are their keys in order, ARGV the batch's sliding-log id, `now` and,
   * unless all are 1, the costs. The reply holds each one's reply, in order.
   */
  private send(batch: readonly BatchEntry[]): void {
    try {
      this.sendNow(batch)
    } catch (error) {
      // Nothing may throw out of the flush (a timer callback): each consume fails instead.
      for (const entry of batch) entry.reject(error)
    }
  }

  private sendNow(batch: readonly BatchEntry[]): void {
    const first = batch[0]
    if (batch.length === 1) {
      this.runAlone(first.plan, first.own, first.key, first.request, 'c', first.extra).then(
        first.resolve,
        first.reject,
      )
      return
    }
    const { plan, own } = first
    const args = [own.batch.sha, String(batch.length)]
    let costs = false
    for (const entry of batch) {
      args.push(entry.key)
      if (entry.request.cost !== 1) costs = true
    }
    args.push(plan.hasLog ? this.requestId(plan) : '')
    args.push(this.serverTime ? '' : String(first.request.now))
    if (costs) for (const entry of batch) args.push(String(entry.request.cost))
    this.evaluate(own.batch, args, (reply) => {
      if (!Array.isArray(reply) || reply.length !== batch.length) {
        throw new Error(`unexpected reply from the sluice script: ${describeValue(reply)}`)
      }
      return reply as unknown[]
    }).then(
      (replies) => {
        const policy = plan.policies[0]
        const kind = plan.flat as FlatKind
        for (let i = 0; i < batch.length; i++) {
          const { request, resolve, reject } = batch[i]
          // A decision that failed in the script (see tail in lua/flat.ts) fails alone.
          if (replies[i] instanceof Error) {
            reject(replies[i])
            continue
          }
          try {
            resolve([flatReply(kind, replies[i], policy, request)])
          } catch (error) {
            reject(error)
          }
        }
      },
      (error: unknown) => {
        for (const entry of batch) entry.reject(error)
      },
    )
  }

  /**
   * EVALSHA (EVAL the first time, which loads the script), then `answer` on the reply.
   * NOSCRIPT (Redis restarted, SCRIPT FLUSH, another cluster node) means the script did not
   * run, so sending it again with EVAL counts nothing twice.
   */
  private evaluate<T>(
    script: LoadedScript,
    args: string[],
    answer: (reply: unknown) => T,
  ): Promise<T> {
    const client = this.client as unknown as Evaluator
    if (!script.sent) {
      script.sent = true
      return client.evalBuffer(script.lua, ...args.slice(1)).then(answer)
    }
    return client.evalshaBuffer(...args).then(answer, (error: unknown) => {
      if (!(error instanceof Error) || !error.message.includes('NOSCRIPT')) throw error
      return client.evalBuffer(script.lua, ...args.slice(1)).then(answer)
    })
  }

  /** The policy's own script, made on first use while fewer than policyScripts exist. */
  private policyScript(policy: Policy): PolicyScript | undefined {
    const config = `${policy.algorithm}/${policy.limit}/${policy.windowMs}/${policy.burst}/${policy.precision}`
    let own = this.policyScripts.get(config)
    if (own === undefined && this.policyScripts.size < this.maxPolicyScripts) {
      const baked = {
        limit: policy.limit,
        windowMs: policy.windowMs,
        burst: policy.burst,
        precision: policy.precision,
        slackMs: Number(this.toleranceMs),
      }
      const single = luaScript(config, flatLua(policy.algorithm, baked))
      const batch = luaScript(`${config}/batch`, flatLua(policy.algorithm, baked, true))
      own = {
        lua: single.lua,
        sha: single.sha,
        sent: false,
        batch: { lua: batch.lua, sha: batch.sha, sent: false },
      }
      this.policyScripts.set(config, own)
    }
    return own
  }

  private plan(policies: readonly Policy[]): Plan {
    let plan = this.plans.get(policies)
    if (plan === undefined) {
      const args: string[] = []
      for (const p of policies) {
        args.push(
          ALGORITHM_CODES[p.algorithm],
          String(p.limit),
          String(p.windowMs),
          String(p.burst),
          String(p.precision),
        )
      }
      const flat = policies.length === 1 ? FLAT[policies[0].algorithm] : undefined
      plan = {
        script: scriptFor(policies),
        generic: genericFor(policies),
        args,
        ids: policies.map((p) => p.id),
        signature: policies.map((p) => `${p.id}/${p.limit}/${p.burst}`).join('|'),
        hasLog: policies.some((p) => p.algorithm === 'sliding-log'),
        flat,
        policies,
        own: flat !== undefined ? this.policyScript(policies[0]) : undefined,
      }
      this.plans.set(policies, plan)
    }
    return plan
  }
}

/** Policy i's state key: `<stem><policy id>`, or `<stem><escaped keys[i]>:<policy id>`. */
function stateKey(
  stem: string,
  keys: readonly string[] | undefined,
  i: number,
  id: string,
): string {
  return keys === undefined ? stem + id : `${stem}${escapePart(keys[i])}:${id}`
}

function asResult(outcomes: PolicyOutcome[]): StoreResult {
  return { outcomes }
}

/** The outcome of a flat script's reply (see flat-outcome.ts); throws on a malformed one. */
function flatReply(
  kind: FlatKind,
  reply: unknown,
  policy: Policy,
  request: StoreRequest,
): PolicyOutcome {
  const outcome = flatOutcome(kind, reply, policy, request.cost, request.maxDelayMs)
  if (outcome === undefined) {
    throw new Error(`unexpected reply from the sluice script: ${describeValue(reply)}`)
  }
  return outcome
}

/** Five integers per policy, as the scripts return them; -1 retryAfterMs is Infinity. */
function parseOutcomes(reply: unknown, n: number): PolicyOutcome[] {
  if (!Array.isArray(reply) || reply.length !== n * 5) {
    throw new Error(`unexpected reply from the sluice script: ${describeValue(reply)}`)
  }
  const outcomes: PolicyOutcome[] = new Array(n)
  for (let i = 0; i < n; i++) {
    const r = reply as number[]
    const retry = r[i * 5 + 3]
    outcomes[i] = {
      allowed: r[i * 5] === 1,
      remaining: r[i * 5 + 1],
      resetMs: r[i * 5 + 2],
      retryAfterMs: retry === -1 ? Infinity : retry,
      delayMs: r[i * 5 + 4],
    }
  }
  return outcomes
}
