/**
 * Owns Redis key names: escaping, hash tags that keep one decision's keys on one slot, prefixes.
 */
import { ConfigError, REGISTRY, type AlgorithmRow, type Policy } from '@sluice/core/web'

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

/** The letter of each of core's algorithm codes in a short policy id (the registry's, see policyKeyId). */
const LETTERS: ReadonlyMap<string, string> = new Map(
  (REGISTRY as readonly AlgorithmRow[]).flatMap((row) => {
    const letters: [string, string][] = [[row.code, row.letter]]
    if (row.firstRequest !== undefined)
      letters.push([row.firstRequest.code, row.firstRequest.letter])
    return letters
  }),
)

/**
 * Each code's registry row (a first-request variant's code, its algorithm's): a meter's id may
 * end with the burst, a ring's (sub-windows) with the precision.
 */
const ROW_OF_CODE: ReadonlyMap<string, AlgorithmRow> = new Map(
  (REGISTRY as readonly AlgorithmRow[]).flatMap((row) => {
    const codes: [string, AlgorithmRow][] = [[row.code, row]]
    if (row.firstRequest !== undefined) codes.push([row.firstRequest.code, row])
    return codes
  }),
)

/** Units a window is written in, largest first (see windowCode). */
const UNITS: readonly (readonly [string, number])[] = [
  ['d', 86_400_000],
  ['h', 3_600_000],
  ['m', 60_000],
  ['s', 1000],
]

/** Core's policy id: `<code>:<limit>:<windowMs>[:<burst or precision>]`, numbers canonical. */
const POLICY_ID = /^([a-z]{2}):(0|[1-9]\d*):(0|[1-9]\d*)(?::(0|[1-9]\d*))?$/

/** A window in the largest unit it is a whole number of (`1h`, `90s`), else in `ms`. */
function windowCode(ms: number): string {
  for (const [unit, size] of UNITS) if (ms % size === 0) return `${ms / size}${unit}`
  return `${ms}ms`
}

/**
 * The last part of a policy's state key: its id (the state's identity in every store), written
 * short so that a state key with a short client key stays in jemalloc's 32-byte class:
 * `<letter><limit>/<window>`, then `b<burst>` for a meter whose burst is not its limit and
 * `p<precision>` for a sliding window with sub-windows. `gc:100:1000:6` is `g100/1sb6`,
 * `sw:100:60000` is `w100/1m`. Letters: f fixed-window, k fixed-window anchored at the first
 * request, w sliding-window, s sliding-log, t token-bucket, l leaky-bucket, g gcra.
 *
 * One id, one code, and the id can be read back from the code (the letter says which field
 * may follow, every number is written one way only), so two policies share a key exactly when
 * they share an id, as in core's MemoryStore; a hash would make that only likely. Made from
 * the id, not the policy's fields: throttling scales limit and burst but keeps the id (same
 * state). An id of any other shape is used whole: it has a `:`, which no code has.
 */
export function policyKeyId(policy: Pick<Policy, 'id'>): string {
  const { id } = policy
  const match = POLICY_ID.exec(id)
  const letter = match === null ? undefined : LETTERS.get(match[1]!)
  if (match === null || letter === undefined) return id
  const [, code, limit, windowMs, last] = match
  const short = `${letter}${limit}/${windowCode(Number(windowMs))}`
  const row = ROW_OF_CODE.get(code)
  if (row?.family === 'meter') {
    if (last === undefined) return id
    return last === limit ? short : `${short}b${last}`
  }
  if (last === undefined) return short
  return row?.state === 'ring' ? `${short}p${last}` : id
}

/**
 * A per-policy state key (StoreRequest.keys) as it goes into a state key name: escaped like
 * the client key, and `:` too, so `<stem><part>:<policy key id>` can be read back one way only
 * (see policyKeyId; the key's block is the lone `b`).
 */
export function escapePart(part: string): string {
  if (part === '') return '%'
  // As in escapeKey: most parts need no escaping, and four scans are cheaper than replace().
  if (
    part.indexOf('%') === -1 &&
    part.indexOf('{') === -1 &&
    part.indexOf('}') === -1 &&
    part.indexOf(':') === -1
  ) {
    return part
  }
  return part.replace(/[%{}:]/g, (c) =>
    c === '%' ? '%25' : c === '{' ? '%7B' : c === '}' ? '%7D' : '%3A',
  )
}
