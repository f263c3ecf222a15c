/** Owns loading an optional peer dependency on first use, with an error that says how to add it. */
import { createRequire } from 'node:module'
import { ConfigError } from '../errors'

/**
 * A loader of `name`, required on its first call and kept; `needs` says who needs it. createRequire
 * works in the CommonJS and the ESM build alike (tsup shims __filename).
 */
export function optionalPeer<T>(name: string, needs: string): () => T {
  let loaded: T | undefined
  return function load(): T {
    if (loaded === undefined) {
      try {
        loaded = createRequire(__filename)(name) as T
      } catch (error) {
        throw new ConfigError(
          `${needs} needs the optional peer dependency \`${name}\`: npm install ${name}`,
          { cause: error },
        )
      }
    }
    return loaded
  }
}
