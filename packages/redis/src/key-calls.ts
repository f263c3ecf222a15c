/**
 * Owns the calls of the keys layout (a key per state, `<prefix>:{<key>}:<policy key id>`) and
 * of the wide one (the same keys ending in `:v`): a policy's own flat script and its batches, a
 * shared script with the driver's KEYS and ARGV, and compare-and-set. The engines (engines/)
 * call these for the keys and wide layouts, and PackedLayout for its scripts.
 */
import type { StoreRequest, StoreResult } from '@sluice/core'
import type { ReplyShape } from '@sluice/core/web'
import type { Batcher, BatchEntry } from './batch'
import type { CasRunner } from './cas/runner'
import type { ScriptClient } from './client/types'
import { evaluate } from './evaluate'
import { keyStem } from './keys'
import { genericBatchOf, type LuaScript } from './lua'
import { stateKey, GenericBatches, type LoadedScript, type Plan, type PolicyScript } from './plan'
import { flatOutcomes, parseOutcomes } from './replies'
import { pushDriverArgs, pushOwnArgs, type ArgSettings, type Op } from './script-args'

/** What the calls take from their store. */
export interface KeyCallsHost {
  readonly client: ScriptClient
  readonly prefix: string
  readonly serverTime: boolean
  readonly argSettings: ArgSettings
  readonly batchSize: number
  readonly batcher: Batcher
  /** The shared scripts, each with whether this store has sent it yet (see evaluate). */
  readonly loaded: ReadonlyMap<LuaScript, LoadedScript>
  /** Plans with a wide policy, on keys of their own (see cas/runner.ts). */
  readonly wide: CasRunner
}

export class KeyCalls {
  /** The batch forms of the generic scripts this store has run. */
  private readonly genericBatches = new GenericBatches()

  constructor(private readonly host: KeyCallsHost) {}

  /** Whether a consume joins a batch (see batchSize): not a reservation. */
  batches(request: StoreRequest): boolean {
    return this.host.batchSize > 1 && !(request.maxDelayMs! > 0)
  }

  /** Core's transitions by compare-and-set, on state keys of their own ending in `:v`. */
  runWide(plan: Plan, request: StoreRequest, op: Op): Promise<StoreResult> {
    const stem = keyStem(this.host.prefix, request.key)
    const places = plan.ids.map((id, i) => ({
      key: stateKey(stem, request.keys, i, id) + ':v',
      field: '',
    }))
    return this.host.wide.run(places, { key: stem + 'b', field: '' }, plan.policies, request, op)
  }

  /**
   * A shared script (flat or generic) on keys of their own, ending in `suffix` (`:v` on the
   * wide layout): the driver's KEYS and ARGV.
   */
  runKeys(
    plan: Plan,
    script: LuaScript,
    request: StoreRequest,
    op: Op,
    extra: string,
    suffix: string,
  ): Promise<StoreResult> {
    const stem = keyStem(this.host.prefix, request.key)
    const n = plan.ids.length
    const keys = request.keys
    const declared = this.host.client.isCluster ? n : n + 1
    // The state keys, then the key's block (see lua/driver.ts for why not on a Cluster).
    const args: string[] = [script.sha, String(declared)]
    if (keys === undefined) for (const id of plan.ids) args.push(stem + id + suffix)
    else for (let i = 0; i < n; i++) args.push(stateKey(stem, keys, i, plan.ids[i]) + suffix)
    if (declared > n) args.push(stem + 'b')
    pushDriverArgs(args, request, op, extra, this.host.argSettings)
    for (const a of plan.args) args.push(a)
    return this.runScript(plan, script, args, request, op)
  }

  /**
   * One call of a script with its whole command (`args`: sha, key count, KEYS, ARGV); a consume
   * through a generic script joins the batch of its batch form (GenericBatches in plan.ts).
   */
  runScript(
    plan: Plan,
    script: LuaScript,
    args: string[],
    request: StoreRequest,
    op: Op,
  ): Promise<StoreResult> {
    const own = op === 'c' && this.batches(request) ? this.genericBatches.of(script) : undefined
    if (own !== undefined) {
      return new Promise((resolve, reject) => {
        const call = { script, args }
        this.host.batcher.enqueue({
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
  evaluateScript(
    plan: Plan,
    script: LuaScript,
    args: string[],
    request: StoreRequest,
    op: Op,
  ): Promise<StoreResult> {
    const { client, loaded, serverTime } = this.host
    return evaluate(client, loaded.get(script) as LoadedScript, args, (reply) => {
      if (op === 'r' || op === 'x') return { outcomes: [] }
      // A generic script (one with a batch form) replies per policy; a flat one, one integer.
      if (plan.flat !== undefined && genericBatchOf(script) === undefined) {
        return flatOutcomes(plan.flat, reply, plan.policies[0], request, serverTime)
      }
      return parseOutcomes(reply, plan, request, serverTime)
    })
  }

  /**
   * A flat operation ('c', 'p', 'r') through the policy's own script, on the state key ending
   * in `suffix` (stateSuffix in route.ts). A plain consume joins the batch of its script (see
   * batchSize); the rest go alone.
   */
  runOwn(
    plan: Plan,
    own: PolicyScript,
    request: StoreRequest,
    op: Op,
    extra: string,
    suffix: string,
  ): Promise<StoreResult> {
    const stem = keyStem(this.host.prefix, request.key)
    const key = stateKey(stem, request.keys, 0, plan.ids[0]) + suffix
    // Declared, except on a Cluster (see lua/driver.ts), which runs no batches.
    const block = this.host.client.isCluster ? undefined : stem + 'b'
    if (op === 'c' && this.batches(request)) {
      return new Promise((resolve, reject) => {
        this.host.batcher.enqueue({ plan, own, key, block, request, extra, resolve, reject })
      })
    }
    return this.runAlone(plan, own, key, block, request, op, extra)
  }

  /**
   * Several policies' operation ('c', 'p', 'r') through the plan's own flat script of them all
   * (lua/flat/several.ts): a plain consume joins the batch of its script; the rest go alone,
   * KEYS the states and the block (not on a Cluster), ARGV as a per-policy script's.
   */
  runSeveral(
    plan: Plan,
    own: PolicyScript,
    request: StoreRequest,
    op: Op,
    extra: string,
  ): Promise<StoreResult> {
    const stem = keyStem(this.host.prefix, request.key)
    const n = plan.ids.length
    const states: string[] = new Array(n)
    for (let i = 0; i < n; i++) states[i] = stateKey(stem, request.keys, i, plan.ids[i])
    const block = this.host.client.isCluster ? undefined : stem + 'b'
    if (op === 'c' && this.batches(request)) {
      return new Promise((resolve, reject) => {
        this.host.batcher.enqueue({
          plan,
          own,
          key: '',
          block,
          states,
          request,
          extra,
          resolve,
          reject,
        })
      })
    }
    const args = [own.sha, String(block === undefined ? n : n + 1), ...states]
    if (block !== undefined) args.push(block)
    pushOwnArgs(args, request, op, extra, this.host.serverTime)
    return this.evaluateOwn(plan, own, args, request, op)
  }

  /** One call of a plan's own script of several policies, and its outcomes (none for a refund). */
  evaluateOwn(
    plan: Plan,
    own: LoadedScript,
    args: string[],
    request: StoreRequest,
    op: Op,
  ): Promise<StoreResult> {
    const { client, serverTime } = this.host
    return evaluate(client, own, args, (reply) =>
      op === 'r' ? { outcomes: [] } : parseOutcomes(reply, plan, request, serverTime),
    )
  }

  /** A batch of one (see Batcher) on keys of their own: its consume alone. */
  runEntry(e: BatchEntry): Promise<StoreResult> {
    return e.call !== undefined
      ? this.evaluateScript(e.plan, e.call.script, e.call.args, e.request, 'c')
      : this.runAlone(e.plan, e.own, e.key, e.block, e.request, 'c', e.extra)
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
  ): Promise<StoreResult> {
    const { client, serverTime } = this.host
    const args = block === undefined ? [own.sha, '1', key] : [own.sha, '2', key, block]
    pushOwnArgs(args, request, op, extra, serverTime)
    return evaluate(client, own, args, (reply) =>
      op === 'r'
        ? { outcomes: [] }
        : flatOutcomes(plan.flat as ReplyShape, reply, plan.policies[0], request, serverTime),
    )
  }
}
