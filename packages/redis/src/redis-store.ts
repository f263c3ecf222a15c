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
}

/** A flat script with one policy baked in (see lua/flat.ts), run with EVALSHA by the store. */
interface PolicyScript {
  readonly lua: string
  readonly sha: string
  /** Set once it has been sent: the first call sends EVAL (which loads it), later ones EVALSHA. */
  sent: boolean
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

/** ioredis's EVAL and EVALSHA, which auto-pipeline like any command when the client does. */
interface Evaluator {
  eval(...args: string[]): Promise<unknown>
  evalsha(...args: string[]): Promise<unknown>
}

type ScriptCommand = (...args: (string | number)[]) => Promise<unknown>

const KNOWN = ['client', 'prefix', 'time', 'clockToleranceMs', 'blockCache', 'policyScripts']

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
 * a key decided in one EVALSHA, one round trip per decision. Works with ioredis
 * `enableAutoPipelining` and with Redis Cluster (every key of one client key shares a hash tag).
 */
export class RedisStore implements Store {
  private readonly client: Redis | Cluster
  private readonly prefix: string
  private readonly serverTime: boolean
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
    await command(
      1,
      keyStem(this.prefix, key) + 'b',
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
   * A flat operation ('c', 'p', 'r') through the policy's own script: EVALSHA <sha> 1 <key>,
   * then only the ARGV up to the last one that is not its default (see `inputs` in
   * lua/flat.ts), so a consume with server time and cost 1 sends no ARGV at all.
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
    const client = this.client as unknown as Evaluator
    let sent: Promise<unknown>
    if (own.sent) {
      sent = client.evalsha(...args)
    } else {
      own.sent = true
      sent = client.eval(own.lua, ...args.slice(1))
    }
    const answer = (reply: unknown): PolicyOutcome[] =>
      op === 'r' ? [] : [flatReply(plan.flat as FlatKind, reply, plan.policies[0], request)]
    return sent.then(answer, (error: unknown) => {
      // NOSCRIPT (Redis restarted, SCRIPT FLUSH, another cluster node): the script did not
      // run, so sending it again with EVAL, which loads it, counts nothing twice.
      if (!(error instanceof Error) || !error.message.includes('NOSCRIPT')) throw error
      return client.eval(own.lua, ...args.slice(1)).then(answer)
    })
  }

  /** The policy's own script, made on first use while fewer than policyScripts exist. */
  private policyScript(policy: Policy): PolicyScript | undefined {
    const config = `${policy.algorithm}/${policy.limit}/${policy.windowMs}/${policy.burst}/${policy.precision}`
    let own = this.policyScripts.get(config)
    if (own === undefined && this.policyScripts.size < this.maxPolicyScripts) {
      const { lua, sha } = luaScript(
        config,
        flatLua(policy.algorithm, {
          limit: policy.limit,
          windowMs: policy.windowMs,
          burst: policy.burst,
          precision: policy.precision,
          slackMs: Number(this.toleranceMs),
        }),
      )
      own = { lua, sha, sent: false }
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
