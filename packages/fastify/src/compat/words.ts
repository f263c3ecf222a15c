/**
 * Owns the wait in words that @fastify/rate-limit's messages quote ('1 second', '7 seconds',
 * '2 minutes'): the largest unit under the wait, rounded half up.
 */
const UNITS = [
  ['year', 31_557_600_000],
  ['day', 86_400_000],
  ['hour', 3_600_000],
  ['minute', 60_000],
  ['second', 1000],
] as const

export function waitInWords(ms: number): string {
  const unit = UNITS.find(([, size]) => ms >= size)
  if (unit === undefined) return `${ms} ms`
  const [name, size] = unit
  const count = Math.floor(ms / size + 0.5)
  return `${count} ${name}${count === 1 ? '' : 's'}`
}
