/**
 * Owns what a route's decorators say about each throttler (`@SkipThrottle`, `@Throttle` and the
 * rest), read from the Reflector once per controller and handler rather than on every request:
 * decorators are fixed when the class is defined, so the first request's reading holds.
 */
import type { Reflector } from '@nestjs/core'
import { THROTTLER_SKIP } from './constants'
import { ROUTE_METADATA } from './route-metadata'
import type {
  Resolvable,
  ThrottlerGenerateKeyFunction,
  ThrottlerGetTrackerFunction,
  ThrottlerOptions,
} from './options'

export type NamedThrottler = ThrottlerOptions & { name: string }

/** The guard-wide fallbacks of a throttler's tracker and key. */
export interface RouteDefaults {
  readonly getTracker: ThrottlerGetTrackerFunction
  readonly generateKey: ThrottlerGenerateKeyFunction
}

/** One throttler on one route: the route's values over the throttler's, and the option names errors give. */
export interface RouteThrottler {
  readonly throttler: NamedThrottler
  readonly skip: boolean
  readonly limit: Resolvable<number>
  readonly ttl: Resolvable<number>
  /** Undefined: the request's ttl. */
  readonly blockDuration: Resolvable<number> | undefined
  readonly getTracker: ThrottlerGetTrackerFunction
  readonly generateKey: ThrottlerGenerateKeyFunction
  readonly labels: { readonly limit: string; readonly ttl: string; readonly block: string }
}

/** The route's throttlers, in the guard's order, cached per controller class and handler. */
export class RouteThrottlers {
  private readonly byClass = new WeakMap<object, WeakMap<object, readonly RouteThrottler[]>>()

  constructor(
    private readonly reflector: Reflector,
    private readonly throttlers: readonly NamedThrottler[],
    private readonly defaults: RouteDefaults,
  ) {}

  of(handler: object, classRef: object): readonly RouteThrottler[] {
    let byHandler = this.byClass.get(classRef)
    if (byHandler === undefined) {
      byHandler = new WeakMap()
      this.byClass.set(classRef, byHandler)
    }
    let route = byHandler.get(handler)
    if (route === undefined) {
      // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type -- the Reflector's own target type
      const targets = [handler, classRef] as Function[]
      route = this.throttlers.map((throttler) => this.read(throttler, targets))
      byHandler.set(handler, route)
    }
    return route
  }

  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type -- the Reflector's own target type
  private read(throttler: NamedThrottler, targets: Function[]): RouteThrottler {
    const name = throttler.name
    const read = <T>(key: string) => this.reflector.getAllAndOverride<T>(key + name, targets)
    const at = `throttler "${name}"`
    return {
      throttler,
      skip: Boolean(read<boolean>(THROTTLER_SKIP)),
      limit: read<Resolvable<number>>(ROUTE_METADATA.limit) || throttler.limit,
      ttl: read<Resolvable<number>>(ROUTE_METADATA.ttl) || throttler.ttl,
      blockDuration:
        read<Resolvable<number>>(ROUTE_METADATA.blockDuration) ||
        throttler.blockDuration ||
        undefined,
      getTracker:
        read<ThrottlerGetTrackerFunction>(ROUTE_METADATA.getTracker) ||
        throttler.getTracker ||
        this.defaults.getTracker,
      generateKey:
        read<ThrottlerGenerateKeyFunction>(ROUTE_METADATA.generateKey) ||
        throttler.generateKey ||
        this.defaults.generateKey,
      labels: {
        limit: `limit of ${at}`,
        ttl: `ttl of ${at}`,
        block: `blockDuration of ${at}`,
      },
    }
  }
}
