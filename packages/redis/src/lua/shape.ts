/**
 * Owns the description of a script: every script RedisStore runs is one of these shapes,
 * compiled from the algorithms' Lua fragments by compile.ts, and how a baked number is written.
 */
import type { LuaFragments, StateShape } from '@sluice/core/web'

/** An algorithm as a generic script runs it: its code in ARGV, and its module. */
export interface ModuleVariant {
  /** Its code in ARGV (a shared script checks it). */
  readonly code: string
  readonly lua: Pick<LuaFragments, 'module' | 'shared'>
}

/** An algorithm as a script runs it: a registry row, or its variant anchored at first request. */
export interface Variant extends ModuleVariant {
  readonly state: StateShape
  readonly lua: LuaFragments
}

/**
 * Where states live: keys of their own (`<stem><policy id>`), fields of packed hashes, or (the
 * generic engine only) keys of their own holding core's state vector as text (`<stem><policy
 * id>:v`, lua/wide.ts), where wide policies run their limbs modules (`<algorithm>.wide.lua.ts`);
 * `packed-wide`, those modules on the packed layout's fields.
 */
export type Layout = 'keys' | 'packed' | 'wide' | 'packed-wide'

/** One decision per call, or a batch: several consumes, decided one after another. */
export type Calls = 'single' | 'batch'

/**
 * A policy baked into a flat script as Lua constants (RedisStore's per-policy scripts): ARGV
 * then carries only what changes from call to call, and usually nothing at all.
 */
export interface BakedPolicy {
  readonly limit: number
  readonly windowMs: number
  readonly burst: number
  readonly precision: number
  /** ms added to every TTL (clockToleranceMs with client time, 0 with server time). */
  readonly slackMs: number
}

/** A baked number as Lua source: an integer below 2^53, written with all its digits. */
export function bakedInteger(x: number): string {
  if (!Number.isSafeInteger(x)) throw new Error(`not an integer: ${x}`)
  return String(x)
}

/**
 * The generic engine: any policies of the variants given (several per key, all-or-nothing),
 * every operation (rewards and penalties too), their policies in ARGV (lua/driver.ts).
 */
export interface GenericShape {
  readonly engine: 'generic'
  readonly variants: readonly ModuleVariant[]
  readonly layout: Layout
  readonly calls: Calls
}

/**
 * The flat engine: one policy of one variant, consume, peek and timed refund, inlined with no
 * table or function built per call (lua/flat/frame.ts); the policy passed in ARGV (the
 * generic scripts' contract) or baked in; a batch needs it baked.
 */
export interface FlatShape {
  readonly engine: 'flat'
  readonly variant: Variant
  readonly layout: 'keys' | 'packed'
  readonly policy: 'passed' | BakedPolicy
  readonly calls: Calls
}

/**
 * The flat engine for several policies of one key (all-or-nothing): each policy's flat body in
 * its steps (LuaFragments.steps), inlined, every policy read and tested before any is written
 * (lua/flat/several.ts); consume, peek and timed refund; the policies baked in, one variant
 * per policy in order (a plan's own script: Planner in plan.ts).
 */
export interface SeveralShape {
  readonly engine: 'several'
  readonly variants: readonly Variant[]
  readonly layout: 'keys' | 'packed'
  readonly policies: readonly BakedPolicy[]
  readonly calls: Calls
}

/**
 * The flat engine for one wide policy (core's isWide) on the wide layout's keys (lua/wide.ts):
 * its limbs module (`<algorithm>.wide.lua.ts`) run on the policy baked in, with no driver
 * around it (lua/flat/wide.ts); consume, peek and timed refund, the per-policy flat scripts'
 * KEYS and ARGV (a plan's own script: Planner in plan.ts).
 */
export interface WideFlatShape {
  readonly engine: 'wide-flat'
  readonly variant: ModuleVariant
  readonly policy: BakedPolicy
  readonly calls: Calls
}

export type ScriptShape = GenericShape | FlatShape | SeveralShape | WideFlatShape
