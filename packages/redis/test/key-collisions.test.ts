import { createLimiter, type Store } from '@sluice/core'
import { createRulesLimiter } from '@sluice/rules'
import { boundKey } from '@sluice/core/adapter'
import { RedisStore } from '@sluice/redis'
import { oneRedis } from './one-redis'

// The three collisions of stored keys, on a real Redis, in both layouts: a prefix and a key,
// a client key and a rules state key, a long key's hash and its literal text.
const redis = oneRedis()
let run = 0

describe.each([
  ['keys of their own', false],
  ['packed', true],
] as const)('RedisStore, %s', (_name, packed) => {
  let store: Store
  beforeEach(() => {
    store = new RedisStore({
      client: redis.client,
      prefix: `kc${run++}`,
      ...(packed ? { packed: { groups: 4 } } : {}),
    })
  })

  // Each test has a store prefix of its own, so the limiters' prefixes can be the issue's.
  test("prefix 'api' with key '2victim' and prefix 'api2' with key 'victim' are two buckets", async () => {
    const a = createLimiter({ limit: 1, window: '1h', store, prefix: 'api' })
    const b = createLimiter({ limit: 1, window: '1h', store, prefix: 'api2' })
    expect((await a.consume('2victim')).allowed).toBe(true)
    expect((await b.consume('victim')).allowed).toBe(true)
    expect((await b.consume('victim')).allowed).toBe(false)
  })

  test("a client key 'api\\0api|user=42' does not share state with the rules key of user 42", async () => {
    const domain = 'api'
    const rules = createRulesLimiter({
      rules: {
        domain,
        descriptors: [{ key: 'user', rate_limit: { unit: 'hour', requests_per_unit: 1 } }],
      },
      store,
    })
    const plain = createLimiter({ limit: 1, window: '1h', store })
    expect((await plain.consume(`${domain}\u0000${domain}|user=42`)).allowed).toBe(true)
    expect((await rules.consume([['user', '42']])).decision?.allowed).toBe(true)
    expect((await rules.consume([['user', '42']])).decision?.allowed).toBe(false)
  })

  test('a 300-byte key and the literal sha256:<its digest> are two buckets', async () => {
    const limiter = createLimiter({ limit: 1, window: '1h', store })
    const long = 'k'.repeat(300)
    expect((await limiter.consume(boundKey(long))).allowed).toBe(true)
    expect((await limiter.consume(boundKey(boundKey(long)))).allowed).toBe(true)
    expect((await limiter.consume(boundKey(long))).allowed).toBe(false)
  })
})
