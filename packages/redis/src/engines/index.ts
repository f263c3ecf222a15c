/**
 * Owns the table from a route's engine (route.ts) to its implementation: with routeOf, the one
 * place that names the path of any decision (docs/architecture.md, "One Redis route").
 */
import type { EngineName } from '../route'
import { casEngine } from './cas'
import type { Engine, EngineHost } from './engine'
import { flatEngine } from './flat'
import { genericEngine } from './generic'

export type { Engine, EngineHost } from './engine'

/** Every engine, by the name a route gives it. */
export type Engines = Readonly<Record<EngineName, Engine>>

/** The engines of one store, on its layouts' calls. */
export function enginesOf(host: EngineHost): Engines {
  return { flat: flatEngine(host), generic: genericEngine(host), cas: casEngine(host) }
}
