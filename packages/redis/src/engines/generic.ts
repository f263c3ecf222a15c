/**
 * Owns the generic engine: any policies of a key, any operation, in one call of the generic
 * script of their algorithms (lua/driver.ts; `packed` on the packed layout, `wide` and
 * `packed-wide` for wide plans, lua/wide.ts); a plain consume joins the batch of its batch form.
 */
import type { LuaScript } from '../lua'
import type { PackedLayout } from '../packed-layout'
import { stateSuffix } from '../route'
import type { Engine, EngineHost } from './engine'

export function genericEngine({ keys, packed }: EngineHost): Engine {
  return {
    run: (plan, route, request, op, extra) =>
      route.layout === 'packed'
        ? (packed as PackedLayout).script(plan, route.script as LuaScript, request, op, extra)
        : keys.runKeys(
            plan,
            route.script as LuaScript,
            request,
            op,
            extra,
            stateSuffix(route.layout),
          ),
  }
}
