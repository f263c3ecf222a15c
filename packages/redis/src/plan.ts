/**
 * Owns what RedisStore sends for a set of policies: which script (flat, per-policy, generic),
 * its policy arguments and state keys, worked out once per policies array.
 */
import { isWide, policyCode, ROWS, type Policy, type ReplyShape } from '@sluice/core/web'
import { escapePart, policyKeyId } from './keys'
import {
  compile,
  flatShape,
  genericBatchOf,
  policyVariant,
  script as luaScript,
  severalShape,
  wideCode,
  wideFlatShape,
  type LuaScript,
} from './lua'
import { routeOf, type Route } from './route'

/** A script the store runs with EVALSHA (see evaluate). */
export interface LoadedScript {
  readonly lua: string
  readonly sha: string
  /** Set once it has been sent: the first call sends EVAL (which loads it), later ones EVALSHA. */
  sent: boolean
}

/** A flat script with one policy baked in (see lua/flat/), and its batch form. */
export interface PolicyScript extends LoadedScript {
  readonly batch: LoadedScript
}

/**
 * The batch forms of the generic scripts (lua/driver.ts, DRIVER_BATCH), one per script and
 * store: consumes of any plans that run one generic script share its batches.
 */
export class GenericBatches {
  private readonly byScript = new Map<LuaScript, PolicyScript>()

  /** The script with its batch form; undefined for a script that has none (a flat one). */
  of(script: LuaScript): PolicyScript | undefined {
    let own = this.byScript.get(script)
    if (own === undefined) {
      const batch = genericBatchOf(script)
      if (batch === undefined) return undefined
      own = withBatch(script, batch)
      this.byScript.set(script, own)
    }
    return own
  }
}

/** A script and its batch form, as a store loads them (neither sent yet). */
export function withBatch(single: LuaScript, batch: LuaScript): PolicyScript {
  return {
    lua: single.lua,
    sha: single.sha,
    sent: false,
    batch: { lua: batch.lua, sha: batch.sha, sent: false },
  }
}

/** What the store sends for one set of policies, worked out once per policies array. */
export interface Plan {
  /** The path of its consumes, peeks and timed refunds (route.ts). */
  readonly decide: Route
  /** The path of its rewards and penalties, which flat scripts do not do. */
  readonly adjust: Route
  /** Five strings per policy: code, limit, windowMs, burst, precision. */
  readonly args: readonly string[]
  /** Policy key ids (see policyKeyId), in order: the last part of each state key. */
  readonly ids: readonly string[]
  /** Identifies the policies for the block cache: id, limit and burst of each. */
  readonly signature: string
  readonly hasLog: boolean
  /** Set when the script is a flat one (one policy): how to read its one-integer reply. */
  readonly flat: ReplyShape | undefined
  /** How each policy's reply reads, in the generic scripts' replies too (one per policy). */
  readonly kinds: readonly ReplyShape[]
  readonly policies: readonly Policy[]
  /**
   * The one policy's own script, when it has one (see RedisStoreOptions.policyScripts); for
   * several policies on the flat engine, the plan's own flat script of them all.
   */
  readonly own: PolicyScript | undefined
  /**
   * A policy is wide (core's isWide): the wide script decides the plan (route.ts), or core
   * does in this process by compare-and-set (cas/runner.ts), on state keys of their own
   * (`<state key>:v`) or on a packed store's fields.
   */
  readonly wide: boolean
}

/** What a policy's script writes in: its code and numbers. */
const configOf = (p: Policy): string =>
  `${policyCode(p)}/${p.limit}/${p.windowMs}/${p.burst}/${p.precision}`

/** Plans per policies array, and the per-policy scripts they share (at most `maxPolicyScripts`). */
export class Planner {
  private readonly plans = new WeakMap<readonly Policy[], Plan>()
  /** Per-policy scripts by configuration (see policyScript). */
  private readonly policyScripts = new Map<string, PolicyScript>()
  /** ms added to every TTL, as the scripts bake it in. */
  private readonly slackMs: number

  /** `toleranceMs`: as sent; `packed`: the store's layout is packed (RedisStoreOptions.packed). */
  constructor(
    toleranceMs: string,
    private readonly maxPolicyScripts: number,
    private readonly packed = false,
  ) {
    this.slackMs = Number(toleranceMs)
  }

  /**
   * The policy's own script, made on first use while fewer than policyScripts exist: its flat
   * script, or a wide policy's (lua/flat/wide.ts).
   */
  private policyScript(policy: Policy, wide: boolean): PolicyScript | undefined {
    const config = configOf(policy)
    let own = this.policyScripts.get(config)
    if (own === undefined && this.policyScripts.size < this.maxPolicyScripts) {
      own = wide ? this.wideScript(policy) : this.flatScript(policy)
      if (own !== undefined) this.policyScripts.set(config, own)
    }
    return own
  }

  /**
   * A policy's flat script with the policy baked in, and its batch form. Packed (but
   * sliding-log): the shared flat script of its algorithm alone, and its own batch form.
   */
  private flatScript(policy: Policy): PolicyScript {
    const baked = {
      limit: policy.limit,
      windowMs: policy.windowMs,
      burst: policy.burst,
      precision: policy.precision,
      slackMs: this.slackMs,
    }
    const variant = policyVariant(policy)
    // A log has no packed script: keys of its own on a packed store too.
    const layout = this.packed && variant.state !== 'log' ? 'packed' : 'keys'
    // The packed layout has no per-policy script of one call: the shared flat one.
    const single =
      layout === 'packed'
        ? (routeOf([policy], false, true, 'decide').script as LuaScript)
        : luaScript(compile(flatShape(variant, layout, baked, 'single')))
    const batch = luaScript(compile(flatShape(variant, layout, baked, 'batch')))
    return withBatch(single, batch)
  }

  /**
   * A wide policy's own flat script (lua/flat/wide.ts), its single call and batch forms; none
   * for a policy without a limbs module (its route is compare-and-set).
   */
  private wideScript(policy: Policy): PolicyScript | undefined {
    const single = wideFlatShape(policy, this.slackMs, 'single')
    const batch = wideFlatShape(policy, this.slackMs, 'batch')
    if (single === undefined || batch === undefined) return undefined
    return withBatch(luaScript(compile(single)), luaScript(compile(batch)))
  }

  /**
   * The plan's own flat script of several policies (lua/flat/several.ts), its single call and
   * batch forms, made on first use while fewer than policyScripts exist (one per set of
   * policies, counted with the per-policy ones).
   */
  private severalScript(
    policies: readonly Policy[],
    layout: Route['layout'],
  ): PolicyScript | undefined {
    const config = policies.map(configOf).join('|')
    let own = this.policyScripts.get(config)
    if (own === undefined && this.policyScripts.size < this.maxPolicyScripts) {
      const of = (calls: 'single' | 'batch'): LuaScript =>
        luaScript(compile(severalShape(policies, layout as 'keys' | 'packed', this.slackMs, calls)))
      own = withBatch(of('single'), of('batch'))
      this.policyScripts.set(config, own)
    }
    return own
  }

  plan(policies: readonly Policy[]): Plan {
    let plan = this.plans.get(policies)
    if (plan === undefined) {
      const wide = policies.some(isWide)
      const adjust = routeOf(policies, wide, this.packed, 'adjust')
      let decide = routeOf(policies, wide, this.packed, 'decide')
      // Several policies on the flat engine run the plan's own script; without one, the route
      // of the other operations decides these too.
      const several =
        policies.length > 1 && decide.engine === 'flat'
          ? this.severalScript(policies, decide.layout)
          : undefined
      if (policies.length > 1 && decide.engine === 'flat' && several === undefined) decide = adjust
      // The wide script runs a wide policy's limbs module, by its own code.
      const scripted = wide && decide.script !== undefined
      const args: string[] = []
      for (const p of policies) {
        args.push(
          scripted ? wideCode(p, policyCode(p)) : policyCode(p),
          String(p.limit),
          String(p.windowMs),
          String(p.burst),
          String(p.precision),
        )
      }
      // One policy on the flat engine (wide too: its own script replies as a flat one).
      const flat =
        policies.length === 1 && decide.engine === 'flat'
          ? ROWS[policies[0].algorithm].reply
          : undefined
      plan = {
        decide,
        adjust,
        args,
        ids: policies.map(policyKeyId),
        signature: policies.map((p) => `${p.id}/${p.limit}/${p.burst}`).join('|'),
        hasLog: policies.some((p) => ROWS[p.algorithm].state === 'log'),
        flat,
        kinds: policies.map((p) => ROWS[p.algorithm].reply),
        policies,
        own: flat !== undefined ? this.policyScript(policies[0], wide) : several,
        wide,
      }
      this.plans.set(policies, plan)
    }
    return plan
  }
}

/** Policy i's state key: `<stem><key id>`, or `<stem><escaped keys[i]>:<key id>` (policyKeyId). */
export function stateKey(
  stem: string,
  keys: readonly string[] | undefined,
  i: number,
  id: string,
): string {
  return keys === undefined ? stem + id : `${stem}${escapePart(keys[i])}:${id}`
}
