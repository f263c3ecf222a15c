/**
 * Owns which group (hash) of a packed store a client key falls in: a keyed hash, so that no
 * one who does not know the store's seed can choose many keys of one group (a flood of one
 * hash grows it past the listpack and makes every call on it slower), and where the seed comes
 * from: the `packed.seed` option, or one the store's processes share through Redis.
 */
import type { ScriptClient } from '../client/types'
import { randomToken, sha256Bytes, utf8Text } from '../web-crypto'

/** Left-rotates a 32-bit integer. */
const rotl = (x: number, b: number): number => (x << b) | (x >>> (32 - b))

/**
 * HalfSipHash-2-4 (the 32-bit SipHash the Linux kernel keys its hash tables with) over the key's
 * UTF-16 code units, two to a word, under the 64-bit key (k0, k1), modulo `groups`.
 */
export class GroupHash {
  constructor(
    private readonly k0: number,
    private readonly k1: number,
    readonly groups: number,
  ) {}

  groupOf(key: string): number {
    let v0 = this.k0
    let v1 = this.k1
    let v2 = this.k0 ^ 0x6c796765
    let v3 = this.k1 ^ 0x74656462
    const rounds = (n: number): void => {
      for (let r = 0; r < n; r++) {
        v0 = (v0 + v1) | 0
        v1 = rotl(v1, 5) ^ v0
        v0 = rotl(v0, 16)
        v2 = (v2 + v3) | 0
        v3 = rotl(v3, 8) ^ v2
        v0 = (v0 + v3) | 0
        v3 = rotl(v3, 7) ^ v0
        v2 = (v2 + v1) | 0
        v1 = rotl(v1, 13) ^ v2
        v2 = rotl(v2, 16)
      }
    }
    const n = key.length
    const whole = n - (n & 1)
    for (let i = 0; i < whole; i += 2) {
      const m = key.charCodeAt(i) | (key.charCodeAt(i + 1) << 16)
      v3 ^= m
      rounds(2)
      v0 ^= m
    }
    // The last word: the length, then the odd code unit if there is one.
    const last = ((n & 0xff) << 24) | (n & 1 ? key.charCodeAt(n - 1) : 0)
    v3 ^= last
    rounds(2)
    v0 ^= last
    v2 ^= 0xff
    rounds(4)
    return ((v1 ^ v3) >>> 0) % this.groups
  }
}

/** The group hash of a seed (any string): its key is the seed's SHA-256, so any seed will do. */
export function groupHashOf(seed: string, groups: number): GroupHash {
  const digest = new DataView(sha256Bytes(seed).buffer)
  return new GroupHash(digest.getInt32(0, true), digest.getInt32(4, true), groups)
}

/** Sets the seed unless one is there, and returns the one that is: one round trip, atomic. */
const SHARED_SEED = `redis.call('SET', KEYS[1], ARGV[1], 'NX')
return redis.call('GET', KEYS[1])`

/**
 * The seed every process of a packed store shares, kept in `<prefix>:seed` (no TTL): the first
 * process to ask sets a random one, the others read it.
 */
export async function sharedSeed(client: ScriptClient, prefix: string): Promise<string> {
  const reply = await client.eval(SHARED_SEED, '1', `${prefix}:seed`, randomToken(16))
  // Some clients answer bulk strings as bytes.
  const seed = reply instanceof Uint8Array ? utf8Text(reply) : reply
  if (typeof seed !== 'string' || seed === '') {
    throw new Error(`unexpected reply for the packed layout's seed: ${String(seed)}`)
  }
  return seed
}
