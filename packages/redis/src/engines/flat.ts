/**
 * Owns the flat engine: one policy's consume, peek or timed refund through its flat script
 * (lua/flat/), the policy's own while it has one (a plain consume joins that script's batch),
 * else the shared `<algorithm>:1` or `:packed`; several policies' through the plan's own flat
 * script of them all (lua/flat/several.ts; the route names no shared script), batched alike.
 */
import type { LuaScript } from '../lua'
import type { PackedLayout } from '../packed-layout'
import type { PolicyScript } from '../plan'
import type { Engine, EngineHost } from './engine'

export function flatEngine({ keys, packed }: EngineHost): Engine {
  return {
    run: (plan, route, request, op, extra) =>
      route.script === undefined
        ? route.layout === 'packed'
          ? (packed as PackedLayout).several(plan, plan.own as PolicyScript, request, op, extra)
          : keys.runSeveral(plan, plan.own as PolicyScript, request, op, extra)
        : route.layout === 'packed'
          ? (packed as PackedLayout).flat(plan, route.script as LuaScript, request, op, extra)
          : plan.own !== undefined
            ? keys.runOwn(plan, plan.own, request, op, extra)
            : keys.runKeys(plan, route.script as LuaScript, request, op, extra, ''),
  }
}
