/**
 * Owns Redis key names: escaping, hash tags that keep one decision's keys on one slot, prefixes.
 */
import { ConfigError } from '@sluice/core'

/** A value for an error message: strings quoted, everything else as JSON where possible. */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value)
  if (typeof value === 'function') return `function ${value.name || '(anonymous)'}`
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}

/**
 * The client key as it goes between the braces of the hash tag. `%`, `{` and `}` are
 * percent-encoded, so a brace in the key can neither end the tag early nor open another one:
 * every policy of a key lands in the slot of the whole key. The empty key becomes a lone `%`
 * (which escaping never produces), because `{}` would make Redis hash the whole name, putting
 * each policy of that key in a different slot.
 */
export function escapeKey(key: string): string {
  if (key === '') return '%'
  // Most keys (IPs, ids) need no escaping: three scans are cheaper than replace().
  if (key.indexOf('%') === -1 && key.indexOf('{') === -1 && key.indexOf('}') === -1) return key
  return key.replace(/[%{}]/g, (c) => (c === '%' ? '%25' : c === '{' ? '%7B' : '%7D'))
}

/** `<prefix>:{<escaped key>}:` — the part of every state key that names the client key. */
export function keyStem(prefix: string, key: string): string {
  return `${prefix}:{${escapeKey(key)}}:`
}

/** Throws unless the prefix is a string without braces (a brace would move the hash tag). */
export function checkPrefix(prefix: unknown): string {
  if (typeof prefix !== 'string' || /[{}]/.test(prefix)) {
    throw new ConfigError(
      `\`prefix\` must be a string without braces; got ${describeValue(prefix)}`,
    )
  }
  return prefix
}

/**
 * A per-policy state key (StoreRequest.keys) as it goes into a state key name: escaped like
 * the client key, and `:` too, so `<stem><part>:<policy id>` can be read back one way only
 * (a policy id starts with its algorithm code; the key's block is the lone `b`).
 */
export function escapePart(part: string): string {
  if (part === '') return '%'
  return part.replace(/[%{}:]/g, (c) =>
    c === '%' ? '%25' : c === '{' ? '%7B' : c === '}' ? '%7D' : '%3A',
  )
}
