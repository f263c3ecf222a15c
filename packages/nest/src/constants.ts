/**
 * Owns the injection tokens and metadata keys. They are @nestjs/throttler's own strings, so code
 * that provides or reads them by value (a test's `{ provide: 'THROTTLER:MODULE_OPTIONS' }`)
 * keeps working after the switch.
 */
export const THROTTLER_LIMIT = 'THROTTLER:LIMIT'
export const THROTTLER_TTL = 'THROTTLER:TTL'
export const THROTTLER_TRACKER = 'THROTTLER:TRACKER'
export const THROTTLER_BLOCK_DURATION = 'THROTTLER:BLOCK_DURATION'
export const THROTTLER_KEY_GENERATOR = 'THROTTLER:KEY_GENERATOR'
export const THROTTLER_OPTIONS = 'THROTTLER:MODULE_OPTIONS'
export const THROTTLER_SKIP = 'THROTTLER:SKIP'
/** The throttler names a `@Throttle()` names, checked against the module's (not upstream's). */
export const THROTTLER_NAMES = 'SLUICE:THROTTLER_NAMES'
/** The name a throttler without one goes by (its headers carry no suffix). */
export const DEFAULT_THROTTLER = 'default'

/**
 * The prefix of a throttler's counts in the store: none for the default one, its name for the
 * others. @nestjs/throttler counts per key and throttler name, so two throttlers of one limit
 * and ttl keep apart even under a `generateKey` that leaves the name out.
 */
export function throttlerPrefix(name: string): string | undefined {
  return name === DEFAULT_THROTTLER ? undefined : name
}
