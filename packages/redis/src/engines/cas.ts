/**
 * Owns the compare-and-set engine: core's transitions in this process, the states read and
 * written by compare-and-set (cas/runner.ts), on wide keys (`:v`) or a packed store's fields.
 */
import type { PackedLayout } from '../packed-layout'
import type { Engine, EngineHost } from './engine'

export function casEngine({ keys, packed }: EngineHost): Engine {
  return {
    run: (plan, route, request, op) =>
      route.layout === 'packed'
        ? (packed as PackedLayout).cas(plan, request, op)
        : keys.runWide(plan, request, op),
  }
}
