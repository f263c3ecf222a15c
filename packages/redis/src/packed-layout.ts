/**
 * Owns a packed store's calls (RedisStoreOptions.packed): where each state and block lives
 * (cas/packed-places.ts), which script decides (lua/packed.ts) or whether compare-and-set does
 * (cas/runner.ts), and its blocks and resets. RedisStore hands it every plan without a
 * sliding-log limit: a log keeps keys of its own, which no field holds.
 */
import type { StoreRequest, StoreResult } from '@sluice/core'
import type { Batcher, BatchEntry } from './batch'
import type { CasOp, CasRunner } from './cas/runner'
import { groupHashOf, sharedSeed, type GroupHash } from './cas/group-hash'
import {
  packedBlock,
  packedField,
  packedPlaces,
  packedStates,
  packedStem,
} from './cas/packed-places'
import type { ScriptClient } from './client/types'
import type { Place } from './cas/storage'
import { escapePart } from './keys'
import type { LuaScript } from './lua'
import type { LoadedScript, Plan, PolicyScript } from './plan'
import { pushDriverArgs, pushOwnArgs } from './script-args'

/** What the packed layout takes from its store. */
export interface PackedHost {
  readonly prefix: string
  readonly groups: number
  /** `packed.seed`; undefined: the seed the store's processes share in `<prefix>:seed`. */
  readonly seed: string | undefined
  /** Reads (or sets) that shared seed. */
  readonly client: ScriptClient
  readonly serverTime: boolean
  /** ms added to every TTL (clockToleranceMs with client time), as a number and as sent. */
  readonly slackMs: number
  readonly toleranceMs: string
  readonly isCluster: boolean
  readonly batcher: Batcher
  /** Whether a consume joins a batch (RedisStore's batchSize). */
  batches(request: StoreRequest): boolean
  /** One call of a plan's own script of several policies, and its outcomes. */
  runOwn(
    plan: Plan,
    own: LoadedScript,
    args: string[],
    request: StoreRequest,
    op: CasOp,
  ): Promise<StoreResult>
  /** One script call with its whole command, and its outcomes. */
  runScript(
    plan: Plan,
    script: LuaScript,
    args: string[],
    request: StoreRequest,
    op: CasOp,
  ): Promise<StoreResult>
}

export class PackedLayout {
  /** Which group a client key is in; undefined until the shared seed has been read. */
  private hash: GroupHash | undefined
  private seeding: Promise<GroupHash> | undefined

  constructor(
    private readonly host: PackedHost,
    /** Compare-and-set on fields of the packed hashes (PackedStorage). */
    private readonly runner: CasRunner,
  ) {
    if (host.seed !== undefined) this.hash = groupHashOf(host.seed, host.groups)
  }

  /**
   * The group hash, from the seed the store's processes share (read once; a failed read is
   * tried again by the next call).
   */
  private seeded(): Promise<GroupHash> {
    this.seeding ??= sharedSeed(this.host.client, this.host.prefix).then(
      (seed) => (this.hash = groupHashOf(seed, this.host.groups)),
      (error: unknown) => {
        this.seeding = undefined
        throw error
      },
    )
    return this.seeding
  }

  /**
   * The flat engine's call (engines/flat.ts): a plain consume joins the batch of the policy's
   * own script; the rest go alone through the shared flat `script`.
   */
  flat(
    plan: Plan,
    script: LuaScript,
    request: StoreRequest,
    op: CasOp,
    extra: string,
  ): Promise<StoreResult> {
    const own = plan.own
    if (own === undefined || op !== 'c' || !this.host.batches(request)) {
      return this.script(plan, script, request, op, extra)
    }
    const hash = this.hash
    if (hash === undefined) {
      return this.seeded().then(() => this.flat(plan, script, request, op, extra))
    }
    const { key, keys } = request
    const stem = packedStem(this.host.prefix, hash, key)
    const escaped = escapePart(key)
    return new Promise((resolve, reject) => {
      this.host.batcher.enqueue({
        plan,
        own,
        key: packedStates(stem),
        block: `${stem}b`,
        fields: [packedField(escaped, keys, plan.ids, 0), escaped],
        request,
        extra,
        resolve,
        reject,
      })
    })
  }

  /**
   * Several policies' operation through the plan's own flat script of them all
   * (lua/flat/several.ts): a plain consume joins its batch; the rest go alone, KEYS the hash
   * of its states and the block's (not on a Cluster), ARGV the fields, the block's, then a per-policy
   * script's ARGV.
   */
  several(
    plan: Plan,
    own: PolicyScript,
    request: StoreRequest,
    op: CasOp,
    extra: string,
  ): Promise<StoreResult> {
    const hash = this.hash
    if (hash === undefined) {
      return this.seeded().then(() => this.several(plan, own, request, op, extra))
    }
    const { key, keys } = request
    const stem = packedStem(this.host.prefix, hash, key)
    const escaped = escapePart(key)
    const n = plan.ids.length
    // The client key's states are fields of one hash, declared once.
    const states = [packedStates(stem)]
    const fields: string[] = new Array(n + 1)
    for (let i = 0; i < n; i++) fields[i] = packedField(escaped, keys, plan.ids, i)
    fields[n] = escaped
    const block = `${stem}b`
    if (op === 'c' && this.host.batches(request)) {
      return new Promise((resolve, reject) => {
        this.host.batcher.enqueue({
          plan,
          own,
          key: '',
          block,
          states,
          fields,
          request,
          extra,
          resolve,
          reject,
        })
      })
    }
    const args = [own.sha, this.host.isCluster ? '1' : '2', ...states]
    if (!this.host.isCluster) args.push(block)
    for (const field of fields) args.push(field)
    pushOwnArgs(args, request, op, extra, this.host.serverTime)
    return this.host.runOwn(plan, own, args, request, op)
  }

  /** A packed script's call (the flat engine's alone, or the generic engine's): runPacked. */
  script(
    plan: Plan,
    script: LuaScript,
    request: StoreRequest,
    op: CasOp,
    extra: string,
  ): Promise<StoreResult> {
    const hash = this.hash
    if (hash === undefined) {
      return this.seeded().then(() => this.script(plan, script, request, op, extra))
    }
    const { key, keys } = request
    const stem = packedStem(this.host.prefix, hash, key)
    const places = packedPlaces(stem, key, keys, plan.ids)
    const block = packedBlock(stem, key, escapePart(key))
    return this.runPacked(plan, script, places, block, request, op, extra)
  }

  /** The compare-and-set engine's call (engines/cas.ts), on the fields of the packed hashes. */
  cas(plan: Plan, request: StoreRequest, op: CasOp): Promise<StoreResult> {
    const hash = this.hash
    if (hash === undefined) return this.seeded().then(() => this.cas(plan, request, op))
    const { key, keys } = request
    const stem = packedStem(this.host.prefix, hash, key)
    const places = packedPlaces(stem, key, keys, plan.ids)
    return this.runner.run(
      places,
      packedBlock(stem, key, escapePart(key)),
      plan.policies,
      request,
      op,
    )
  }

  /** A batch of one (see Batcher): its consume alone, through the policy's flat script. */
  runAlone(entry: BatchEntry): Promise<StoreResult> {
    const [state, block] = entry.fields as readonly [string, string]
    return this.runPacked(
      entry.plan,
      entry.plan.decide.script as LuaScript,
      [{ key: entry.key, field: state }],
      { key: entry.block as string, field: block },
      entry.request,
      'c',
      entry.extra,
    )
  }

  /** Sets (or lifts) the key's block: a field of `<prefix>:{%g<group>}:b`, by compare-and-set. */
  async block(key: string, until: number, now: number): Promise<void> {
    const { prefix, serverTime, slackMs } = this.host
    const hash = this.hash ?? (await this.seeded())
    const span = until - now
    const place = packedBlock(packedStem(prefix, hash, key), key)
    return this.runner.put([place], serverTime ? undefined : now, (at) =>
      span > 0 ? { value: String(at + span), ttlMs: span + slackMs } : { value: '', ttlMs: 0 },
    )
  }

  /** Deletes the key's block, and its states unless the plan keeps keys of its own (a log). */
  async reset(key: string, plan: Plan, keys: readonly string[] | undefined): Promise<void> {
    const hash = this.hash ?? (await this.seeded())
    const stem = packedStem(this.host.prefix, hash, key)
    const places = plan.hasLog ? [] : packedPlaces(stem, key, keys, plan.ids)
    places.push(packedBlock(stem, key))
    const now = this.host.serverTime ? undefined : Date.now()
    return this.runner.put(places, now, () => ({ value: '', ttlMs: 0 }))
  }

  /**
   * Any operation of a plan a packed script decides (lua/packed.ts): the hashes, then the
   * block's (not on a Cluster, see lua/driver.ts); the driver's ARGV with each policy's field
   * after its arguments, and the block's field last (the flat scripts take the same for one).
   */
  private runPacked(
    plan: Plan,
    script: LuaScript,
    places: readonly Place[],
    block: Place,
    request: StoreRequest,
    op: CasOp,
    extra: string,
  ): Promise<StoreResult> {
    const n = places.length
    const { isCluster } = this.host
    const args: string[] = [script.sha, String(isCluster ? n : n + 1)]
    for (const place of places) args.push(place.key)
    if (!isCluster) args.push(block.key)
    pushDriverArgs(args, request, op, extra, this.host)
    for (let i = 0; i < n; i++) {
      for (let a = i * 5; a < i * 5 + 5; a++) args.push(plan.args[a])
      args.push(places[i].field)
    }
    args.push(block.field)
    return this.host.runScript(plan, script, args, request, op)
  }
}
