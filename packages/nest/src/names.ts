/**
 * Owns the check of `@Throttle()` names: one the module does not configure would silently do
 * nothing, so it is a ConfigError, at start-up for every controller, or at a route's first request.
 */
import type { ModulesContainer } from '@nestjs/core'
import { ConfigError } from '@sluice/core'
import { THROTTLER_NAMES } from './constants'

function describeTarget(target: object): string {
  const name = (target as { name?: unknown }).name
  return typeof name === 'string' && name !== '' ? name : 'a handler'
}

/** Throws when `target`'s `@Throttle()` names a throttler not in `known`. */
export function checkThrottleNames(target: object, known: readonly string[], where?: string): void {
  const named: unknown = Reflect.getMetadata(THROTTLER_NAMES, target)
  if (!Array.isArray(named)) return
  for (const name of named) {
    if (!known.includes(name)) {
      const configured = known.map((n) => JSON.stringify(n)).join(', ')
      throw new ConfigError(
        `@Throttle() on ${where ?? describeTarget(target)} names throttler ${JSON.stringify(name)}, which ThrottlerModule does not configure (configured: ${configured})`,
      )
    }
  }
}

/** Checks every controller class and route the app registered. */
export function checkControllers(modules: ModulesContainer, known: readonly string[]): void {
  for (const module of modules.values()) {
    for (const wrapper of module.controllers.values()) {
      const type = wrapper.metatype as (new (...args: never[]) => unknown) | null
      if (typeof type !== 'function') continue
      checkThrottleNames(type, known)
      const prototype = type.prototype as Record<string, unknown>
      for (const method of Object.getOwnPropertyNames(prototype)) {
        const route = Object.getOwnPropertyDescriptor(prototype, method)?.value
        if (typeof route === 'function' && method !== 'constructor') {
          checkThrottleNames(route, known, `${type.name}.${method}`)
        }
      }
    }
  }
}
