import { createHash } from 'node:crypto'

/** The default key's hash (sha256, hex), as @nestjs/throttler's, so keys in a shared store match. */
export function hashKey(text: string): string {
  return createHash('sha256').update(text).digest('hex')
}
