/**
 * Owns the scripts RedisStore loads: the table of their shapes (compiled by compile.ts from the
 * registry's Lua fragments), the fixed scripts beside them, and their SHA1s.
 */
import {
  isWide,
  REGISTRY,
  ROWS,
  type AlgorithmName,
  type AlgorithmRow,
  type Policy,
  type WindowAnchor,
} from '@sluice/core/web'
import { BLOCK } from './block'
import { PACKED_READ, PACKED_WRITE, WIDE_READ, WIDE_WRITE } from './cas'
import { compile } from './compile'

export { compile } from './compile'
import type {
  BakedPolicy,
  Calls,
  FlatShape,
  Layout,
  ModuleVariant,
  ScriptShape,
  SeveralShape,
  Variant,
  WideFlatShape,
} from './shape'
import { sha1Hex } from '../web-crypto'

export type { BakedPolicy } from './shape'

/** One Lua script as RedisStore runs it (EVALSHA, and EVAL to load it). */
export interface LuaScript {
  readonly lua: string
  /** SHA1 of `lua`: what SCRIPT LOAD returns and EVALSHA runs. */
  readonly sha: string
}

export function script(lua: string): LuaScript {
  return { lua, sha: sha1Hex(lua) }
}

const variantOf = (row: AlgorithmRow): Variant => ({
  code: row.code,
  state: row.state,
  lua: row.lua,
})

/** A policy's variant: its algorithm's, or the one anchored at each key's first request. */
export function policyVariant(policy: Pick<Policy, 'algorithm' | 'anchor'>): Variant {
  const row = ROWS[policy.algorithm]
  const first = policy.anchor === 'first-request' ? row.firstRequest : undefined
  return first === undefined
    ? variantOf(row)
    : { code: first.code, state: row.state, lua: first.lua }
}

/** Whether a variant's state is two integers: the packed layout's generic script takes those. */
const isPair = (variant: Variant): boolean => variant.state === 'pair'

/** Whether a flat script runs the algorithm on the packed layout: all but a log, which no field holds. */
export const hasPackedFlat = (algorithm: AlgorithmName): boolean => ROWS[algorithm].state !== 'log'

/** Whether every policy's state is a pair (the packed layout's generic script). */
export const allPairs = (policies: readonly Pick<Policy, 'algorithm' | 'anchor'>[]): boolean =>
  policies.every((p) => isPair(policyVariant(p)))

const generic = (
  variants: readonly ModuleVariant[],
  layout: Layout,
  calls: Calls,
): ScriptShape => ({
  engine: 'generic',
  variants,
  layout,
  calls,
})

/** The flat shape of a policy's variant; `policy` baked in, or 'passed' in ARGV. */
export function flatShape(
  variant: Variant,
  layout: FlatShape['layout'],
  policy: FlatShape['policy'],
  calls: Calls,
): FlatShape {
  return { engine: 'flat', variant, layout, policy, calls }
}

export type ScriptName =
  | AlgorithmName
  | 'mixed'
  | `${AlgorithmName}:batch`
  | 'mixed:batch'
  | 'packed:batch'
  | `${AlgorithmName}:1`
  | `${AlgorithmName}/first-request:1`
  | 'packed'
  | 'wide'
  | 'wide:batch'
  | 'packed-wide'
  | 'packed-wide:batch'
  | `${AlgorithmName}:packed`
  | `${AlgorithmName}/first-request:packed`
  | 'block'
  | 'wide-read'
  | 'wide-write'
  | 'packed-read'
  | 'packed-write'

/**
 * Every shared script's shape, by name:
 *
 * | name                                   | engine  | layout | policy | calls  |
 * | `<algorithm>`                          | generic | keys   | passed | single |
 * | `<algorithm>:batch`                    | generic | keys   | passed | batch  |
 * | `mixed`, `mixed:batch`                 | generic (every algorithm) | keys | passed | single, batch |
 * | `packed`, `packed:batch`               | generic (the pairs) | packed | passed | single, batch |
 * | `wide`, `wide:batch`                   | generic (the pairs, and the wide meters' limbs modules) | wide | passed | single, batch |
 * | `packed-wide`, `packed-wide:batch`     | generic (as `wide`) | packed-wide | passed | single, batch |
 * | `<algorithm>:1`, `<algorithm>/first-request:1` | flat | keys | passed | single |
 * | `<algorithm>:packed`, `.../first-request:packed` (all but a log) | flat | packed | passed | single |
 *
 * One script per algorithm is used when every policy of a limiter has that algorithm, `mixed`
 * for limiters that mix them: either way one EVALSHA decides every policy of a key. Flat
 * scripts decide a single policy, same contract and decisions with less work per call. The
 * per-policy scripts (flat, the policy baked in, and their batches: Planner in plan.ts) are
 * compiled from the same shapes on first use.
 */
function sharedShapes(): Record<string, ScriptShape> {
  const shapes: Record<string, ScriptShape> = {}
  const all: Variant[] = []
  const wide: ModuleVariant[] = []
  for (const row of REGISTRY) {
    const variant = variantOf(row)
    all.push(variant)
    shapes[row.name] = generic([variant], 'keys', 'single')
    shapes[`${row.name}:batch`] = generic([variant], 'keys', 'batch')
    const forms: [string, Variant][] = [[row.name, variant]]
    if ((row as AlgorithmRow).firstRequest !== undefined) {
      forms.push([
        `${row.name}/first-request`,
        policyVariant({ algorithm: row.name, anchor: 'first-request' }),
      ])
    }
    const wideLua = (row as AlgorithmRow).wideLua?.lua
    if (wideLua !== undefined) wide.push({ code: wideLua.code, lua: wideLua })
    for (const [name, form] of forms) {
      if (form.state === 'pair') wide.push(form)
      shapes[`${name}:1`] = flatShape(form, 'keys', 'passed', 'single')
      if (form.state !== 'log')
        shapes[`${name}:packed`] = flatShape(form, 'packed', 'passed', 'single')
    }
  }
  shapes.mixed = generic(all, 'keys', 'single')
  shapes['mixed:batch'] = generic(all, 'keys', 'batch')
  const pairs = all.filter(isPair)
  shapes.packed = generic(pairs, 'packed', 'single')
  shapes['packed:batch'] = generic(pairs, 'packed', 'batch')
  shapes.wide = generic(wide, 'wide', 'single')
  shapes['wide:batch'] = generic(wide, 'wide', 'batch')
  shapes['packed-wide'] = generic(wide, 'packed-wide', 'single')
  shapes['packed-wide:batch'] = generic(wide, 'packed-wide', 'batch')
  return shapes
}

/** Most policies one flat script of several decides (SeveralShape); more: the generic script. */
export const MAX_SEVERAL = 8

/** Whether each policy's variant has the flat steps a script of several inlines (not a log). */
export const hasSteps = (policies: readonly Pick<Policy, 'algorithm' | 'anchor'>[]): boolean =>
  policies.every((p) => policyVariant(p).lua.steps !== undefined)

/**
 * The shape of a plan's own flat script of several policies (Planner in plan.ts), each baked
 * with `slackMs`, on `layout`, of one call or a batch.
 */
export function severalShape(
  policies: readonly Policy[],
  layout: SeveralShape['layout'],
  slackMs: number,
  calls: Calls,
): SeveralShape {
  return {
    engine: 'several',
    variants: policies.map(policyVariant),
    layout,
    policies: policies.map((p) => ({
      limit: p.limit,
      windowMs: p.windowMs,
      burst: p.burst,
      precision: p.precision,
      slackMs,
    })),
    calls,
  }
}

/**
 * The shape of a wide policy's own flat script (Planner in plan.ts; lua/flat/wide.ts): its
 * limbs module with the policy baked in, of one call or a batch. Undefined when the policy
 * has no limbs module (core decides it by compare-and-set).
 */
export function wideFlatShape(
  policy: Policy,
  slackMs: number,
  calls: Calls,
): WideFlatShape | undefined {
  const wideLua = ROWS[policy.algorithm].wideLua?.lua
  if (wideLua === undefined) return undefined
  const { limit, windowMs, burst, precision } = policy
  return {
    engine: 'wide-flat',
    variant: { code: wideLua.code, lua: wideLua },
    policy: { limit, windowMs, burst, precision, slackMs },
    calls,
  }
}

/** The shapes of the shared scripts (see sharedShapes). */
export const SHAPES: Readonly<Record<string, ScriptShape>> = sharedShapes()

/**
 * Every script the store shares, by name: the compiled shapes (SHAPES), and the fixed ones:
 * `block` sets or lifts a key's block (block.ts); `wide-read`, `wide-write`, `packed-read`,
 * `packed-write` read and compare-and-set the plans core decides in the store's process (cas.ts).
 */
export const SCRIPTS = {
  ...Object.fromEntries(
    Object.entries(SHAPES).map(([name, shape]) => [name, script(compile(shape))]),
  ),
  block: script(BLOCK),
  'wide-read': script(WIDE_READ),
  'wide-write': script(WIDE_WRITE),
  'packed-read': script(PACKED_READ),
  'packed-write': script(PACKED_WRITE),
} as Readonly<Record<ScriptName, LuaScript>>

/** The batch form of each generic script of one call. */
const BATCHES: ReadonlyMap<LuaScript, LuaScript> = new Map(
  Object.entries(SHAPES)
    .filter(([, shape]) => shape.engine === 'generic' && shape.calls === 'single')
    .map(([name]) => [SCRIPTS[name as ScriptName], SCRIPTS[`${name}:batch` as ScriptName]]),
)

/** The batch form of a generic script; undefined for any other script. */
export function genericBatchOf(generic: LuaScript): LuaScript | undefined {
  return BATCHES.get(generic)
}

/** The shared script of `name`. */
export const scriptNamed = (name: string): LuaScript => SCRIPTS[name as ScriptName]

/**
 * A flat script's Lua on `layout`: shared (policy in ARGV), or with `baked` as constants; with
 * `batch` (baked only), the form that decides one consume per key of KEYS in one call. The
 * packed layout (packed.ts) has no per-policy script of one call.
 */
function flatLayoutLua(
  layout: FlatShape['layout'],
  algorithm: AlgorithmName,
  baked: BakedPolicy | undefined,
  batch: boolean,
  anchor: WindowAnchor,
): string {
  const variant = policyVariant({ algorithm, anchor })
  return compile(flatShape(variant, layout, baked ?? 'passed', batch ? 'batch' : 'single'))
}

/** A flat script's Lua on keys of their own (see flatLayoutLua). */
export const flatLua = (
  algorithm: AlgorithmName,
  baked?: BakedPolicy,
  batch = false,
  anchor: WindowAnchor = 'clock',
): string => flatLayoutLua('keys', algorithm, baked, batch, anchor)

/** A flat script's Lua on the packed layout (see flatLayoutLua). */
export const packedFlatLua = (
  algorithm: AlgorithmName,
  baked?: BakedPolicy,
  batch = false,
  anchor: WindowAnchor = 'clock',
): string => flatLayoutLua('packed', algorithm, baked, batch, anchor)

/**
 * Whether the wide script decides `policies` (a plan with a wide one): every wide policy has
 * a wide module (the meters) and every other a state of two integers. Else core does, by
 * compare-and-set (route.ts).
 */
export const wideScripted = (policies: readonly Policy[]): boolean =>
  policies.every((p) =>
    isWide(p) ? ROWS[p.algorithm].wideLua !== undefined : policyVariant(p).state === 'pair',
  )

/** A policy's code in the wide script's ARGV: its wide module's when it is wide. */
export const wideCode = (policy: Policy, code: string): string =>
  isWide(policy) ? (ROWS[policy.algorithm].wideLua?.lua.code ?? code) : code
