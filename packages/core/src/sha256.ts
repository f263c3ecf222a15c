/**
 * Owns SHA-256 for bounding long keys: synchronous (Web Crypto's digest is async, and a key is
 * needed in the same turn) and free of node:crypto, so the request path runs where only web
 * APIs exist: @noble/hashes (audited, no dependencies), not a hash of our own. Only keys past
 * MAX_KEY_BYTES reach it. Its digests equal node:crypto's (a test).
 */
import { sha256 as nobleSha256 } from '@noble/hashes/sha2'

/** The UTF-8 length of a string (lone surrogates count 3 bytes, as their U+FFFD replacement). */
export function utf8Length(text: string): number {
  let bytes = 0
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code < 0x80) bytes += 1
    else if (code < 0x800) bytes += 2
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1)
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4
        i++
      } else bytes += 3
    } else bytes += 3
  }
  return bytes
}

/** SHA-256 of the UTF-8 bytes of `text`, as 32 bytes. */
export function sha256(text: string): Uint8Array {
  return nobleSha256(new TextEncoder().encode(text))
}

/** Unpadded base64url, as Node's `digest('base64url')` writes it (btoa is a web global). */
export function base64url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '')
}
