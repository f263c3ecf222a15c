/**
 * Owns the key a limiter's store sees for a client key: the key checked (a string), then under
 * the limiter's prefix (store/key-parts.ts), as every operation of the limiter names it.
 */
import { prefixedKey } from '../store/key-parts'
import { checkKey } from './checks'

/** The store key of `key` for a limiter with `prefix`; throws on a key that is no string. */
export function storeKeyOf(prefix: string): (key: string) => string {
  return function storeKey(key: string): string {
    checkKey(key)
    return prefixedKey(prefix, key)
  }
}
