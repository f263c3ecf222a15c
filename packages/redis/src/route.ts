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
 * | packed store, no log, all pairs        | any other                    | generic | packed  |
 * | packed store, no log, otherwise        | any other                    | cas     | packed  |
 * | a wide one (*)                         | any                          | generic | wide    |
 * | a wide one, otherwise                  | any                          | cas     | wide    |
 * | one policy                             | consume, peek, timed refund  | flat    | keys    |
 * | otherwise                              | any other                    | generic | keys    |
 *
 * (*): every wide policy a meter and every other a pair (wideScripted, lua/index.ts): the
 * `wide` script, `packed-wide` on the packed layout (lua/wide.ts).
 * `flat`: the policy's flat script (its own, baked, while the store makes those; else the
 * shared `<algorithm>:1` or `:packed`); `generic`: the generic script of the policies'
 * algorithms (`packed` on the packed layout); `cas`: core's transitions in this process,
 * read and written by compare-and-set (cas/runner.ts). Layouts: `keys`, a key per state;
 * `packed`, fields of shared hashes (a log keeps keys of its own: no field holds a sorted set);
 * `wide`, keys of their own ending in `:v`, holding core's state vector as text (the `wide`
 * script: lua/wide.ts, the wide meters' limbs modules beside the pairs' own). A consume
 * through a script joins the batch of its script's batch form when the store batches (batch.ts).
 */
import type { Policy } from '@sluice/core/web'
import { allPairs, policyVariant, scriptNamed, wideScripted, type LuaScript } from './lua'

export type Engine = 'flat' | 'generic' | 'cas'
export type RouteLayout = 'keys' | 'packed' | 'wide'

/** The path of one operation of a plan. */
export interface Route {
  readonly engine: Engine
  readonly layout: RouteLayout
  /** The script it runs (a shared one); undefined for compare-and-set. */
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
  if (packed && !log) {
    if (wide) return wideScripted(policies) ? route('generic', 'packed', 'packed-wide') : CAS_PACKED
    if (flat) return route('flat', 'packed', `${flatName(policies[0])}:packed`)
    return allPairs(policies) ? route('generic', 'packed', 'packed') : CAS_PACKED
  }
  if (wide) {
    return wideScripted(policies)
      ? route('generic', 'wide', 'wide')
      : { engine: 'cas', layout: 'wide', script: undefined }
  }
  if (flat) return route('flat', 'keys', `${flatName(policies[0])}:1`)
  const first = policies[0].algorithm
  return route('generic', 'keys', policies.every((p) => p.algorithm === first) ? first : 'mixed')
}

const CAS_PACKED: Route = { engine: 'cas', layout: 'packed', script: undefined }

const route = (engine: Engine, layout: RouteLayout, name: string): Route => ({
  engine,
  layout,
  script: scriptNamed(name),
})

/** The name of a policy's flat scripts: its algorithm's, or its first-request variant's. */
const flatName = (policy: Policy): string =>
  policy.anchor === 'first-request' ? `${policy.algorithm}/first-request` : policy.algorithm
