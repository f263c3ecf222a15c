/**
 * Owns the key a limiter's store sees for a client key: the key checked (a string), then under
 * the limiter's prefix (store/key-parts.ts), as every operation of the limiter names it.
 */
import { prefixedKey, wellFormedKey } from '../store/key-parts'
import type { Store } from '../store/types'
import { checkKey } from './checks'

/**
 * The store key of `key` for a limiter with `prefix` on `store`; throws on a key that is no
 * string. A shared store gets it well-formed (wellFormedKey); an in-process one keeps every
 * string apart as it is, as the in-process path keys it (limiter/in-process.ts).
 */
export function storeKeyOf(prefix: string, store: Pick<Store, 'local'>): (key: string) => string {
  if (store.local === true) {
    return function storeKey(key: string): string {
      checkKey(key)
      return prefixedKey(prefix, key)
    }
  }
  return function sharedStoreKey(key: string): string {
    checkKey(key)
    return wellFormedKey(prefixedKey(prefix, key))
  }
}
