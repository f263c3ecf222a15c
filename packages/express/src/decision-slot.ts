/**
 * Owns how the Express middleware puts its decision on the request (\`req.rateLimit\`): a WeakMap
 * behind an accessor on Express's shared request prototype, rather than a new property on each
 * request (see decisionRecorder for why, and what it saves).
 */
import { IncomingMessage } from 'node:http'
import type { Decision } from '@sluice/core'
import type { Request } from 'express'

/** A decision property's accessor on Express's shared request prototype, and the map behind it. */
interface DecisionSlot {
  decisions: WeakMap<object, unknown>
  get: (this: object) => unknown
}

/** One slot per property name, shared by every middleware that writes under that name. */
const slots = new Map<string, DecisionSlot>()

function slotFor(property: string): DecisionSlot {
  let slot = slots.get(property)
  if (slot === undefined) {
    const decisions = new WeakMap<object, unknown>()
    slot = {
      decisions,
      get() {
        return decisions.get(this)
      },
    }
    slots.set(property, slot)
  }
  return slot
}

/**
 * The request prototype Express shares between its apps (the one just above IncomingMessage's),
 * or undefined when `prototype` is not an Express request's.
 */
function sharedRequestPrototype(prototype: object | null): object | undefined {
  while (prototype !== null) {
    const parent = Object.getPrototypeOf(prototype) as object | null
    if (parent === IncomingMessage.prototype) return prototype
    prototype = parent
  }
  return undefined
}

/** Installs the slot's accessor where every app's requests see it; false where it cannot go. */
function installAccessor(prototype: object, property: string, slot: DecisionSlot): boolean {
  const shared = sharedRequestPrototype(prototype)
  if (shared === undefined) return false
  const existing = Object.getOwnPropertyDescriptor(shared, property)
  if (existing !== undefined) return existing.get === slot.get
  // A name used elsewhere on the chain (a stream method, say) must not be shadowed.
  if (property in shared) return false
  const { decisions } = slot
  Object.defineProperty(shared, property, {
    configurable: true,
    get: slot.get,
    set(this: object, value: unknown) {
      decisions.set(this, value)
    },
  })
  return true
}

/**
 * Returns how a middleware puts its decision on `req[property]`. Express gives each request its
 * app's prototype (Object.setPrototypeOf) and then adds properties to it, after which V8 gives
 * every request a hidden class of its own: adding `req.rateLimit` builds yet another (measured
 * 2026-11-25 with bench/instructions.js, Express 5, one run each: 571.9k instructions per
 * admitted request with a plain assignment, 556.0k with this accessor, 2.8% less). So
 * the decision goes into a WeakMap, without touching the request, and is read (and written)
 * through an accessor installed once on Express's shared request prototype, below every app's,
 * so it stays visible when a mounted sub-app swaps prototypes.
 */
export function decisionRecorder<Value = Decision>(
  property: string,
): (req: Request, decision: Value | undefined) => void {
  const slot = slotFor(property)
  const accessorFor = new WeakMap<object, boolean>()
  let lastPrototype: object | undefined
  let lastHasAccessor = false
  return function recordDecision(req, decision) {
    const prototype = Object.getPrototypeOf(req) as object
    let firstSight = false
    if (prototype !== lastPrototype) {
      let hasAccessor = accessorFor.get(prototype)
      firstSight = hasAccessor === undefined
      if (hasAccessor === undefined) {
        hasAccessor = installAccessor(prototype, property, slot)
        accessorFor.set(prototype, hasAccessor)
      }
      lastPrototype = prototype
      lastHasAccessor = hasAccessor
    }
    // A request seen before the accessor existed may hold an own property an earlier write
    // left; a plain assignment goes through the setter, or onto that property, to be read back.
    if (lastHasAccessor && !firstSight) slot.decisions.set(req, decision)
    else (req as unknown as Record<string, unknown>)[property] = decision
  }
}
