/**
 * Owns the hashes and random tokens RedisStore needs, free of node:crypto so that the store
 * loads where only web APIs exist (Vercel Edge, Next.js middleware, workerd without
 * nodejs_compat): SHA-1 and SHA-256 from @noble/hashes (audited, no dependencies, the one core
 * uses; synchronous, as a script's SHA is needed when the store is built), randomness from Web
 * Crypto's `getRandomValues`, which Node 20 has as a global too.
 */
import { sha1 } from '@noble/hashes/legacy'
import { sha256 } from '@noble/hashes/sha2'

const encoder = new TextEncoder()

/** Lowercase hex SHA-1 of the UTF-8 bytes of `text`: what Redis's SCRIPT LOAD returns. */
export function sha1Hex(text: string): string {
  let hex = ''
  for (const byte of sha1(encoder.encode(text))) hex += byte.toString(16).padStart(2, '0')
  return hex
}

/** SHA-256 of the UTF-8 bytes of `text`, as 32 bytes. */
export function sha256Bytes(text: string): Uint8Array {
  return sha256(encoder.encode(text))
}

/** `bytes` random bytes as unpadded base64url, as Node's `randomBytes(n).toString('base64url')`. */
export function randomToken(bytes: number): string {
  const random = globalThis.crypto.getRandomValues(new Uint8Array(bytes))
  return btoa(String.fromCharCode(...random))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '')
}

/** A bulk-string reply as text: some clients answer bytes (Uint8Array or Buffer). */
export function utf8Text(reply: Uint8Array): string {
  return new TextDecoder().decode(reply)
}
