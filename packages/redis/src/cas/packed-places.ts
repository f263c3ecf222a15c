/**
 * Owns where a packed store (RedisStoreOptions.packed) keeps each state: one hash per group,
 * `<prefix>:{%g<group>}:s`, a field per client key and limit (the escaped policy key id, `:`,
 * the escaped client key, then `:<escaped state key>` for rules); the key's block in
 * `<prefix>:{%g<group>}:b`. Every limit of a client key is a field of one hash, so a limiter of
 * several limits reads them with one `HMGET` and writes them with one `HSET`
 * (lua/flat/several.ts), and a limit two limiters share is still one field. The group is a
 * keyed hash of the client key modulo `groups` (group-hash.ts), so every place of one client key
 * shares one hash tag (one Cluster slot). `%g` never comes out of escapeKey, so no client key's
 * own key can be one of these names; no escaped part has a `:`, so a field names one limit of
 * one key only, and none is the sweep's count `%n`.
 */
import { escapePart } from '../keys'
import type { GroupHash } from './group-hash'
import type { Place } from './storage'

/** The stem every place of the client key shares: `<prefix>:{%g<group>}:`. */
export function packedStem(prefix: string, hash: GroupHash, key: string): string {
  return `${prefix}:{%g${hash.groupOf(key)}}:`
}

/** The hash of the states of a stem's group. */
export const packedStates = (stem: string): string => `${stem}s`

/**
 * Policy i's field: its escaped policy key id (`ids[i]`), then the escaped client key, then
 * `:<escaped state key>` for rules.
 */
export function packedField(
  escapedKey: string,
  keys: readonly string[] | undefined,
  ids: readonly string[],
  i: number,
): string {
  const field = `${escapePart(ids[i])}:${escapedKey}`
  return keys === undefined ? field : `${field}:${escapePart(keys[i])}`
}

/** Where policy i's state lives (`ids[i]` its policy key id). */
export function packedPlaces(
  stem: string,
  key: string,
  keys: readonly string[] | undefined,
  ids: readonly string[],
): Place[] {
  const escaped = escapePart(key)
  const states = packedStates(stem)
  return ids.map((_, i) => ({ key: states, field: packedField(escaped, keys, ids, i) }))
}

/** Where the client key's block lives (`escapedKey`: escapePart(key), when the caller has it). */
export function packedBlock(stem: string, key: string, escapedKey = escapePart(key)): Place {
  return { key: `${stem}b`, field: escapedKey }
}
