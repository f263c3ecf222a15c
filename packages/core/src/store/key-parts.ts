/**
 * Owns how the parts of a stored key (a limiter's prefix and client key, a rules group and
 * each rule's state key) are joined so that no two different sets of parts give one string,
 * whatever a part contains.
 *
 * A part is escaped (`\0` becomes `\0\1`), so in an escaped part every `\0` is followed by
 * `\1`; parts are joined by `\0\2`, which escaping never produces. A joined key is read back one
 * way only, and it never equals an escaped single part. Parts without `\0` (almost every key)
 * are kept as they are: a key without a prefix is stored unchanged.
 */

/** The separator between two joined parts; escapeKeyPart never produces it. */
export const KEY_PART_SEPARATOR = '\u0000\u0002'

/** A part with `\0` escaped as `\0\1`; the part itself when it has none. */
export function escapeKeyPart(part: string): string {
  return part.indexOf('\u0000') === -1 ? part : part.split('\u0000').join('\u0000\u0001')
}

/** Two parts as one key that no other pair of parts (and no single part) gives. */
export function joinKeyParts(first: string, second: string): string {
  return escapeKeyPart(first) + KEY_PART_SEPARATOR + escapeKeyPart(second)
}

/**
 * The stored key of a client key under `prefix` (a limiter's or a rules limiter's): the key
 * escaped, or prefix and key joined. `prefix: 'api'` with key `2victim` and `prefix: 'api2'`
 * with key `victim` are different keys.
 */
export function prefixedKey(prefix: string, key: string): string {
  return prefix === '' ? escapeKeyPart(key) : joinKeyParts(prefix, key)
}

/** Half a UTF-16 pair with no other half beside it. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g
const ANY_SURROGATE = /[\uD800-\uDFFF]/

/**
 * A stored key as a shared store can keep it apart: a store that writes keys as UTF-8 (Redis,
 * memcached, Postgres) turns every lone surrogate into U+FFFD, so `'\uD800'`, `'\uDBFF'` and
 * `'\uFFFD'` would share one state. Each lone surrogate becomes `\0\3` and its four hex digits,
 * which nothing else produces (in a stored key every `\0` is followed by `\1` or `\2`); a key
 * without one, almost every key, is kept as it is.
 */
export function wellFormedKey(key: string): string {
  if (!ANY_SURROGATE.test(key)) return key
  return key.replace(LONE_SURROGATE, (half) => `\u0000\u0003${half.charCodeAt(0).toString(16)}`)
}
