/** Owns `limiter.topRefused(n)`: its check of `n`, and its error when the option is off. */
import { ConfigError, invalidOption } from '../errors'
import type { RefusedKey, RefusedKeys } from '../metrics/top-refused'

export function topRefusedOf(refused: RefusedKeys | undefined): (n?: number) => RefusedKey[] {
  return function topRefused(n = 10) {
    if (refused === undefined) {
      throw new ConfigError(
        'topRefused() needs the limiter option `topRefused` (for example `topRefused: { k: 100 }`)',
      )
    }
    if (!Number.isSafeInteger(n) || n < 1) invalidOption('n', n, 'a positive whole number')
    return refused.top(n)
  }
}
