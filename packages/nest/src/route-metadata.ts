/**
 * Owns the metadata keys of a route's per-throttler values: `@Throttle()` writes them and the
 * guard's RouteThrottlers reads them, each key followed by the throttler's name.
 */
import {
  THROTTLER_BLOCK_DURATION,
  THROTTLER_KEY_GENERATOR,
  THROTTLER_LIMIT,
  THROTTLER_TRACKER,
  THROTTLER_TTL,
} from './constants'

/** The metadata key of each value `@Throttle()` overrides, in the order it writes them. */
export const ROUTE_METADATA = {
  ttl: THROTTLER_TTL,
  limit: THROTTLER_LIMIT,
  blockDuration: THROTTLER_BLOCK_DURATION,
  getTracker: THROTTLER_TRACKER,
  generateKey: THROTTLER_KEY_GENERATOR,
} as const

/** The values `@Throttle()` overrides. */
export type RouteOption = keyof typeof ROUTE_METADATA

/** The options in the order `@Throttle()` writes them. */
export const ROUTE_OPTIONS = Object.keys(ROUTE_METADATA) as RouteOption[]
