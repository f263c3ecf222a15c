/** Durations in milliseconds, as `ttl` and `blockDuration` take them. */
export const seconds = (howMany: number): number => howMany * 1000
export const minutes = (howMany: number): number => 60 * howMany * seconds(1)
export const hours = (howMany: number): number => 60 * howMany * minutes(1)
export const days = (howMany: number): number => 24 * howMany * hours(1)
export const weeks = (howMany: number): number => 7 * howMany * days(1)
