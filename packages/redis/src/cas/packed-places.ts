/**
 * Owns where a packed store (RedisStoreOptions.packed) keeps each state: one hash per limit and
 * group, `<prefix>:{%g<group>}:<policy id>`, a field per client key (its escaped key, then
 * `:<escaped state key>` for rules); the key's block in `<prefix>:{%g<group>}:b`. The group is
 * a keyed hash of the client key modulo `groups` (group-hash.ts), so every place of one client key shares one hash
 * tag (one Cluster slot). `%g` never comes out of escapeKey, so no client key's own key can be
 * one of these names.
 */
import { escapePart } from '../keys'
import type { GroupHash } from './group-hash'
import type { Place } from './storage'

/** The stem every place of the client key shares: `<prefix>:{%g<group>}:`. */
export function packedStem(prefix: string, hash: GroupHash, key: string): string {
  return `${prefix}:{%g${hash.groupOf(key)}}:`
}

/** Policy i's field: the escaped client key, then `:<escaped state key>` for rules. */
export function packedField(
  escapedKey: string,
  keys: readonly string[] | undefined,
  i: number,
): string {
  return keys === undefined ? escapedKey : `${escapedKey}:${escapePart(keys[i])}`
}

/** Where policy i's state lives (`ids[i]` its policy id). */
export function packedPlaces(
  stem: string,
  key: string,
  keys: readonly string[] | undefined,
  ids: readonly string[],
): Place[] {
  const escaped = escapePart(key)
  return ids.map((id, i) => ({ key: stem + id, field: packedField(escaped, keys, i) }))
}

/** Where the client key's block lives (`escapedKey`: escapePart(key), when the caller has it). */
export function packedBlock(stem: string, key: string, escapedKey = escapePart(key)): Place {
  return { key: `${stem}b`, field: escapedKey }
}
