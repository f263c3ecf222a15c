/**
 * Owns the wait in words of koa-ratelimit's default message ("retry in 59 minutes."): the
 * largest unit the wait reaches, rounded, plural from one and a half units on.
 */
const UNITS: ReadonlyArray<readonly [name: string, ms: number]> = [
  ['day', 86_400_000],
  ['hour', 3_600_000],
  ['minute', 60_000],
  ['second', 1000],
]

/** `ms` in words: '2 days', '1 hour', '59 minutes', '30 seconds', or '500 ms' under a second. */
export function durationWords(ms: number): string {
  for (const [name, size] of UNITS) {
    if (ms >= size) return `${Math.round(ms / size)} ${name}${ms >= size * 1.5 ? 's' : ''}`
  }
  return `${ms} ms`
}
