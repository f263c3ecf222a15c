/**
 * Owns how a memory store row holds its key: in a 16-byte field of the row itself, so that a
 * key costs its characters and no string, array slot or pointer; a key that does not fit is
 * kept as a string in a list beside the rows.
 */
import { hashCodes, type KeyHash } from './key-index'

/** Bytes of a row's key field (two of the row's doubles). */
export const KEY_FIELD_BYTES = 16
/** Characters a key field holds: one byte each, after the length byte. */
const INLINE_CHARS = KEY_FIELD_BYTES - 1
/** The length byte of a field whose key is in the list; its index follows as an int32. */
const LISTED = 0xff

/** Keys too long for their field (or with a character past U+00FF), by list index. */
export class ListedKeys {
  private strings: string[] = []
  private free: number[] = []

  add(key: string): number {
    const at = this.free.length > 0 ? (this.free.pop() as number) : this.strings.length
    this.strings[at] = key
    return at
  }

  at(index: number): string {
    return this.strings[index]
  }

  release(index: number): void {
    this.strings[index] = ''
    this.free.push(index)
  }
}

/** Whether the key fits its row's field: at most 15 characters, each below U+0100. */
function fitsField(key: string): boolean {
  if (key.length > INLINE_CHARS) return false
  for (let i = 0; i < key.length; i++) if (key.charCodeAt(i) > 0xff) return false
  return true
}

/**
 * A view of the key fields of one segment of rows: `bytes` and `ints` are the segment's buffer,
 * `at` the byte offset of a row's field (a multiple of 8).
 */
export function writeKey(
  bytes: Uint8Array,
  ints: Int32Array,
  at: number,
  key: string,
  listed: ListedKeys,
): void {
  if (!fitsField(key)) {
    bytes[at] = LISTED
    ints[(at >> 2) + 1] = listed.add(key)
    return
  }
  bytes[at] = key.length
  for (let i = 0; i < key.length; i++) bytes[at + 1 + i] = key.charCodeAt(i)
}

/** Whether the field at `at` holds `key`. */
export function holdsKey(
  bytes: Uint8Array,
  ints: Int32Array,
  at: number,
  key: string,
  listed: ListedKeys,
): boolean {
  const length = bytes[at]
  if (length === LISTED) return listed.at(ints[(at >> 2) + 1]) === key
  if (length !== key.length) return false
  for (let i = 0; i < length; i++) if (bytes[at + 1 + i] !== key.charCodeAt(i)) return false
  return true
}

/** The key the field at `at` holds. */
export function readKey(
  bytes: Uint8Array,
  ints: Int32Array,
  at: number,
  listed: ListedKeys,
): string {
  const length = bytes[at]
  if (length === LISTED) return listed.at(ints[(at >> 2) + 1])
  let key = ''
  for (let i = 0; i < length; i++) key += String.fromCharCode(bytes[at + 1 + i])
  return key
}

/** The hash of the field's key, without building the key when the hash is the default one. */
export function hashHeldKey(
  bytes: Uint8Array,
  ints: Int32Array,
  at: number,
  listed: ListedKeys,
  hash: KeyHash,
  seed: number,
): number {
  const length = bytes[at]
  if (length === LISTED) return hash(listed.at(ints[(at >> 2) + 1]), seed)
  return (
    hashCodes(hash, bytes, at + 1, length, seed) ?? hash(readKey(bytes, ints, at, listed), seed)
  )
}

/** Forgets the field's key: a listed key's place in the list is given back. */
export function releaseKey(
  bytes: Uint8Array,
  ints: Int32Array,
  at: number,
  listed: ListedKeys,
): void {
  if (bytes[at] === LISTED) listed.release(ints[(at >> 2) + 1])
  bytes[at] = 0
}
