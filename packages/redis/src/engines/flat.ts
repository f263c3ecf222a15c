/**
 * Owns the flat engine: one policy's consume, peek or timed refund through its flat script
 * (lua/flat/), the policy's own while it has one (a plain consume joins that script's batch),
 * else the shared `<algorithm>:1` or `:packed`; several policies' through the plan's own flat
 * script of them all (lua/flat/several.ts; the route names no shared script), batched alike;
 * one wide policy's through its own (lua/flat/wide.ts), else the shared `wide` script.
 */
import { stateSuffix } from '../route'
import type { PackedLayout } from '../packed-layout'
import type { PolicyScript } from '../plan'
import type { Engine, EngineHost } from './engine'

export function flatEngine({ keys, packed }: EngineHost): Engine {
  return {
    run: (plan, route, request, op, extra) => {
      const own = plan.own
      if (route.layout === 'packed') {
        return route.script === undefined
          ? (packed as PackedLayout).several(plan, own as PolicyScript, request, op, extra)
          : (packed as PackedLayout).flat(plan, route.script, request, op, extra)
      }
      if (route.script === undefined) {
        return keys.runSeveral(plan, own as PolicyScript, request, op, extra)
      }
      const suffix = stateSuffix(route.layout)
      return own !== undefined
        ? keys.runOwn(plan, own, request, op, extra, suffix)
        : keys.runKeys(plan, route.script, request, op, extra, suffix)
    },
  }
}
