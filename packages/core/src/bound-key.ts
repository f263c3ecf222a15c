/**
 * Owns bounding a key's size: longer keys are hashed (SHA-256), so a hostile header cannot
 * bloat a store. The HTTP pipeline bounds every key it derives, and stores with a key size limit
 * (PostgresStore) bound theirs the same way.
 */
import { base64url, sha256, utf8Length } from './sha256'

/** Longer keys are hashed, so a hostile header cannot bloat the store. */
export const MAX_KEY_BYTES = 256

/** What a hashed key starts with; a client key that starts with it is hashed too. */
const HASHED = 'sha256:'

/**
 * Keys past `MAX_KEY_BYTES` become `sha256:<digest>`: same client, same bucket, bounded size. A
 * key that already starts with `sha256:` is hashed as well, whatever its length, so no client
 * can send the name another key's hash takes (a 300-byte key and the literal
 * `sha256:<its digest>` are two buckets).
 */
export function boundKey(key: string): string {
  // A UTF-16 unit is at most 3 UTF-8 bytes, so short keys skip the byte count.
  const short = key.length * 3 <= MAX_KEY_BYTES || utf8Length(key) <= MAX_KEY_BYTES
  if (short && !key.startsWith(HASHED)) return key
  return `${HASHED}${base64url(sha256(key))}`
}
