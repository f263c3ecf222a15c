import { hash } from 'node:crypto'

/** The default key's hash (sha256, hex), as @nestjs/throttler's, so keys in a shared store match. */
export function hashKey(text: string): string {
  // The one-shot hash (Node 20.12+) skips building a Hash object per request.
  return hash('sha256', text, 'hex')
}
