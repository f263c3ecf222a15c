/**
 * Owns the decorators: `@Throttle()` and `@SkipThrottle()` put per-throttler metadata on a
 * controller or a route (read by the guard); the two injectors name the module's tokens.
 */
import { Inject } from '@nestjs/common'
import { THROTTLER_NAMES, THROTTLER_OPTIONS, THROTTLER_SKIP } from './constants'
import { ROUTE_METADATA, ROUTE_OPTIONS } from './route-metadata'
import type {
  Resolvable,
  ThrottlerGenerateKeyFunction,
  ThrottlerGetTrackerFunction,
} from './options'
import { ThrottlerStorage } from './storage'

/** What `@Throttle()` overrides for one named throttler. */
export interface ThrottlerMethodOrControllerOptions {
  limit?: Resolvable<number>
  /** ms */
  ttl?: Resolvable<number>
  /** ms */
  blockDuration?: Resolvable<number>
  getTracker?: ThrottlerGetTrackerFunction
  generateKey?: ThrottlerGenerateKeyFunction
}

type Target = object
type Decorator = MethodDecorator & ClassDecorator

/** A method decorator's target is its function; a class decorator's, the class. */
function targetOf(target: Target, descriptor?: PropertyDescriptor): Target {
  return (descriptor?.value as Target | undefined) ?? target
}

/**
 * Overrides named throttlers' values on a controller or a route, e.g.
 * `@Throttle({ default: { limit: 3, ttl: seconds(60) } })`. A name the module does not
 * configure is an error (when the app starts, or at the route's first request).
 */
export const Throttle = (options: Record<string, ThrottlerMethodOrControllerOptions>): Decorator =>
  ((target: Target, _key?: string | symbol, descriptor?: PropertyDescriptor) => {
    const on = targetOf(target, descriptor)
    for (const name in options) {
      const values = options[name]
      for (const option of ROUTE_OPTIONS) {
        Reflect.defineMetadata(ROUTE_METADATA[option] + name, values[option], on)
      }
    }
    Reflect.defineMetadata(THROTTLER_NAMES, Object.keys(options), on)
    return descriptor ?? target
  }) as Decorator

/**
 * Skips throttlers on a controller or a route: `@SkipThrottle()` the default one,
 * `@SkipThrottle({ short: true })` named ones; `false` undoes a controller's skip on a route.
 */
export const SkipThrottle = (skip: Record<string, boolean> = { default: true }): Decorator =>
  ((target: Target, _key?: string | symbol, descriptor?: PropertyDescriptor) => {
    const on = targetOf(target, descriptor)
    for (const name in skip) Reflect.defineMetadata(THROTTLER_SKIP + name, skip[name], on)
    return descriptor ?? target
  }) as Decorator

/** Injects the module's options. */
export const InjectThrottlerOptions = () => Inject(THROTTLER_OPTIONS)

/** Injects the module's storage. */
export const InjectThrottlerStorage = () => Inject(ThrottlerStorage)

/** The token of the module's options. */
export const getOptionsToken = () => THROTTLER_OPTIONS

/** The token of the module's storage. */
export const getStorageToken = () => ThrottlerStorage
