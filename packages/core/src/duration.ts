/**
 * Owns durations as options take them: `'1m'`, `'500ms'` or ms, parsed and formatted.
 */
import { invalidOption } from './errors'

const UNIT_MS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1000,
  sec: 1000,
  second: 1000,
  seconds: 1000,
  m: 60_000,
  min: 60_000,
  minute: 60_000,
  minutes: 60_000,
  h: 3_600_000,
  hour: 3_600_000,
  hours: 3_600_000,
  d: 86_400_000,
  day: 86_400_000,
  days: 86_400_000,
}

const DURATION = /^\s*(\d+(?:\.\d+)?)\s*([a-z]+)\s*$/i

/** A duration: milliseconds as a number, or a string such as `'500ms'`, `'10s'`, `'15m'`, `'1h'`, `'1d'`, `'1 minute'`. */
export type Duration = number | string

/**
 * Parses a duration into whole milliseconds (at least 1).
 * Throws a ConfigError naming `option` when the value is not a positive duration.
 */
export function parseDuration(value: unknown, option: string): number {
  let ms: number | undefined
  if (typeof value === 'number') {
    ms = value
  } else if (typeof value === 'string') {
    const match = DURATION.exec(value)
    if (match) {
      const unit = UNIT_MS[match[2].toLowerCase()]
      if (unit !== undefined) ms = Number(match[1]) * unit
    } else if (/^\s*\d+\s*$/.test(value)) {
      ms = Number(value)
    }
  }
  if (ms === undefined || !Number.isFinite(ms) || ms < 1 || !Number.isInteger(ms)) {
    invalidOption(
      option,
      value,
      "a whole number of milliseconds >= 1 or a duration such as '500ms', '10s', '15m', '1h', '1d'",
    )
  }
  return ms
}

/** Formats milliseconds the short way (`60000` -> `'1m'`), for policy names and messages. */
export function formatDuration(ms: number): string {
  for (const [unit, size] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ] as const) {
    if (ms % size === 0) return `${ms / size}${unit}`
  }
  return `${ms}ms`
}
