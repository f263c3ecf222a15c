import { createLimiter, MemoryStore, type Store } from '@sluice/core'
import { createRulesLimiter } from '@sluice/rules'
import { boundKey } from '@sluice/core/adapter'

// The parts of a stored key (prefix, client key, rules group and state key, the hash of a long
// key) must never let one client's bucket be another's, whatever the client key holds.
const T0 = 1_000_000

function limiterOn(store: Store, prefix?: string) {
  return createLimiter({ limit: 1, window: '1h', store, prefix, clock: () => T0 })
}

describe('stored keys never collide (MemoryStore)', () => {
  test("prefix 'api' with key '2victim' and prefix 'api2' with key 'victim' are two buckets", async () => {
    const store = new MemoryStore()
    expect((await limiterOn(store, 'api').consume('2victim')).allowed).toBe(true)
    expect((await limiterOn(store, 'api2').consume('victim')).allowed).toBe(true)
    // And a key without a prefix cannot name a prefixed one either.
    const joined = 'api\u0000\u0002victim'
    expect((await limiterOn(store, 'api').consume('victim')).allowed).toBe(true)
    expect((await limiterOn(store).consume(joined)).allowed).toBe(true)
    expect((await limiterOn(store, 'api').consume('victim')).allowed).toBe(false)
  })

  test("a client key 'api\\0api|user=42' does not share state with the rules key of user 42", async () => {
    const store = new MemoryStore()
    const rules = createRulesLimiter({
      rules: {
        domain: 'api',
        descriptors: [{ key: 'user', rate_limit: { unit: 'hour', requests_per_unit: 1 } }],
      },
      store,
      clock: () => T0,
    })
    // The attacker spends the bucket its key names...
    expect((await limiterOn(store).consume('api\u0000api|user=42')).allowed).toBe(true)
    // ...which is not user 42's.
    expect((await rules.consume([['user', '42']])).decision?.allowed).toBe(true)
    expect((await rules.consume([['user', '42']])).decision?.allowed).toBe(false)
  })

  test('a 300-byte key and the literal sha256:<its digest> are two buckets', async () => {
    const store = new MemoryStore()
    const long = 'k'.repeat(300)
    const hashed = boundKey(long)
    expect(hashed).toMatch(/^sha256:/)
    // A client sending the hash's own text as its key gets a bucket of its own.
    expect(boundKey(hashed)).not.toBe(hashed)
    expect(boundKey(hashed)).toMatch(/^sha256:/)
    const limiter = limiterOn(store)
    expect((await limiter.consume(boundKey(long))).allowed).toBe(true)
    expect((await limiter.consume(boundKey(hashed))).allowed).toBe(true)
    expect((await limiter.consume(boundKey(long))).allowed).toBe(false)
    // Keys that do not start with the marker are kept as they are.
    expect(boundKey('user:42')).toBe('user:42')
  })
})
