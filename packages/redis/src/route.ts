/**
 * Owns which path a Redis decision takes: one function from a plan's policies, the store's
 * layout and the operation to an engine, a layout and the script (docs/architecture.md, "One
 * Redis route"):
 *
 * | policies                               | operation                    | engine  | layout  |
 * | -------------------------------------- | ---------------------------- | ------- | ------- |
 * | packed store, no log, a wide one (*)   | any                          | generic | packed  |
 * | packed store, no log, a wide one, else | any                          | cas     | packed  |
 * | packed store, no log, one policy       | consume, peek, timed refund  | flat    | packed  |
 * | packed store, no log, several (**)     | consume, peek, timed refund  | flat    | packed  |
 * | packed store, no log, all pairs        | any other                    | generic | packed  |
 * | packed store, no log, otherwise        | any other                    | cas     | packed  |
 * | one policy, wide (*)                   | consume, peek, timed refund  | flat    | wide    |
 * | a wide one (*)                         | any                          | generic | wide    |
 * | a wide one, otherwise                  | any                          | cas     | wide    |
 * | one policy                             | consume, peek, timed refund  | flat    | keys    |
 * | several (**)                           | consume, peek, timed refund  | flat    | keys    |
 * | otherwise                              | any other                    | generic | keys    |
 *
 * (*): every wide policy a meter and every other a pair (wideScripted, lua/index.ts): the
 * `wide` script, `packed-wide` on the packed layout (lua/wide.ts); one wide policy alone, its
 * own flat script (lua/flat/wide.ts) while the store makes those, else that `wide` script.
 * (**): 2 to 8 policies, none a log, no two at one state (severalFlat below).
 * `flat`: the policy's flat script (its own, baked, while the store makes those; else the
 * shared `<algorithm>:1` or `:packed`); for several, the plan's own flat script of them all
 * (lua/flat/several.ts), made while the store makes per-policy scripts, else the plan takes
 * its route of any other operation for every one (plan.ts); `generic`: the generic script of
 * the policies' algorithms (`packed` on the packed layout); `cas`: core's transitions in this
 * process, read and written by compare-and-set (cas/runner.ts). Layouts: `keys`, a key per state;
 * `packed`, fields of shared hashes (a log keeps keys of its own: no field holds a sorted set);
 * `wide`, keys of their own ending in `:v`, holding core's state vector as text (the `wide`
 * script: lua/wide.ts, the wide meters' limbs modules beside the pairs' own). A consume
 * through a script joins the batch of its script's batch form when the store batches (batch.ts).
 */
import type { Policy } from '@sluice/core/web'
import { policyKeyId } from './keys'
import {
  allPairs,
  hasSteps,
  MAX_SEVERAL,
  policyVariant,
  scriptNamed,
  wideScripted,
  type LuaScript,
} from './lua'

/** An engine's name: its implementation is engines/index.ts's table entry (one interface). */
export type EngineName = 'flat' | 'generic' | 'cas'
export type RouteLayout = 'keys' | 'packed' | 'wide'

/** The path of one operation of a plan. */
export interface Route {
  readonly engine: EngineName
  readonly layout: RouteLayout
  /**
   * The script it runs (a shared one); undefined for compare-and-set, and for several policies
   * on the flat engine, which run the plan's own script (plan.ts).
   */
  readonly script: LuaScript | undefined
}

/** Consume, peek and timed refund (the flat scripts do these); rewards and penalties. */
export type Operations = 'decide' | 'adjust'

/** The route of `operations` on `policies`; `packed`: the store's layout is packed. */
export function routeOf(
  policies: readonly Policy[],
  wide: boolean,
  packed: boolean,
  operations: Operations,
): Route {
  const log = policies.some((p) => policyVariant(p).state === 'log')
  const flat = policies.length === 1 && operations === 'decide'
  const several = operations === 'decide' && !wide && severalFlat(policies)
  if (packed && !log) {
    if (wide) return wideScripted(policies) ? route('generic', 'packed', 'packed-wide') : CAS_PACKED
    if (flat) return route('flat', 'packed', `${flatName(policies[0])}:packed`)
    if (several) return SEVERAL_PACKED
    return allPairs(policies) ? route('generic', 'packed', 'packed') : CAS_PACKED
  }
  if (wide) {
    if (!wideScripted(policies)) return { engine: 'cas', layout: 'wide', script: undefined }
    return route(flat ? 'flat' : 'generic', 'wide', 'wide')
  }
  if (flat) return route('flat', 'keys', `${flatName(policies[0])}:1`)
  if (several) return SEVERAL_KEYS
  const first = policies[0].algorithm
  return route('generic', 'keys', policies.every((p) => p.algorithm === first) ? first : 'mixed')
}

/** What a state key ends in on a route's layout: `:v` on the wide one (lua/wide.ts). */
export const stateSuffix = (layout: RouteLayout): string => (layout === 'wide' ? ':v' : '')

const CAS_PACKED: Route = { engine: 'cas', layout: 'packed', script: undefined }
const SEVERAL_PACKED: Route = { engine: 'flat', layout: 'packed', script: undefined }
const SEVERAL_KEYS: Route = { engine: 'flat', layout: 'keys', script: undefined }

/**
 * Whether a flat script of several policies decides them: 2 to MAX_SEVERAL, each with its flat
 * steps (not a log), no two at one state (one policy key id): two that share a state each take
 * the cost from it in turn, which the generic script does.
 */
function severalFlat(policies: readonly Policy[]): boolean {
  if (policies.length < 2 || policies.length > MAX_SEVERAL || !hasSteps(policies)) return false
  return new Set(policies.map(policyKeyId)).size === policies.length
}

const route = (engine: EngineName, layout: RouteLayout, name: string): Route => ({
  engine,
  layout,
  script: scriptNamed(name),
})

/** The name of a policy's flat scripts: its algorithm's, or its first-request variant's. */
const flatName = (policy: Policy): string =>
  policy.anchor === 'first-request' ? `${policy.algorithm}/first-request` : policy.algorithm
