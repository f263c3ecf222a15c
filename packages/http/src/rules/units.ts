/**
 * Owns the units a rule counts per. Apart from schema.ts (which loads zod through node:module),
 * so that compiling and deciding rules import nothing of Node's.
 */

/** The units a `rate_limit` counts per, as Lyft's ratelimit service names them. */
export type RuleUnit = 'second' | 'minute' | 'hour' | 'day'

export const UNIT_MS: Readonly<Record<RuleUnit, number>> = {
  second: 1000,
  minute: 60_000,
  hour: 3_600_000,
  day: 86_400_000,
}
