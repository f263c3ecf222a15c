import { ConfigError, createLimiter } from '@sluice/core'
import { RedisStore } from '@sluice/redis'
import { useRedisServer } from './fixtures/redis-server'

// The packed layout's group of a client key is a keyed hash: which keys share a hash depends on
// the store's seed, so no client can choose many keys of one group without knowing it.
const redis = useRedisServer({ maxRetriesPerRequest: 1 })
const connect = redis.connect

const KEYS = Array.from({ length: 64 }, (_, i) => `client-${i}`)

/** Which group (`%g<n>`) each client key's field is in, after one consume of every key. */
async function groupsOf(prefix: string, seed?: string): Promise<Map<string, string>> {
  const store = new RedisStore({ client: connect(), prefix, packed: { groups: 64, seed } })
  const limiter = createLimiter({ store, algorithm: 'gcra', limit: 10, window: '1h' })
  for (const key of KEYS) await limiter.consume(key)
  const groups = new Map<string, string>()
  for (const hash of await redis.admin.keys(`${prefix}:{%g*`)) {
    const group = /\{%g(\d+)\}/.exec(hash)?.[1] as string
    // A field is `<policy key id>:<client key>` (cas/packed-places.ts).
    for (const field of await redis.admin.hkeys(hash)) {
      groups.set(field.slice(field.indexOf(':') + 1), group)
    }
  }
  expect(groups.size).toBe(KEYS.length)
  return groups
}

test('the group of a client key depends on the seed; one seed, one grouping', async () => {
  const one = await groupsOf('seed-a', 'one')
  const two = await groupsOf('seed-b', 'two')
  const again = await groupsOf('seed-c', 'one')
  const moved = KEYS.filter((key) => one.get(key) !== two.get(key)).length
  // 64 groups: a key stays in its group by chance once in 64.
  expect(moved).toBeGreaterThan(KEYS.length * 0.8)
  expect(KEYS.every((key) => one.get(key) === again.get(key))).toBe(true)
})

test('without a seed, the processes of a store share one through Redis, and each store has its own', async () => {
  const a = createLimiter({
    store: new RedisStore({ client: connect(), prefix: 'shared', packed: { groups: 64 } }),
    algorithm: 'gcra',
    limit: 10,
    window: '1h',
  })
  const b = createLimiter({
    store: new RedisStore({ client: connect(), prefix: 'shared', packed: { groups: 64 } }),
    algorithm: 'gcra',
    limit: 10,
    window: '1h',
  })
  // Started together: both ask for the seed at once, and agree on it.
  await Promise.all([a.consume('alice'), b.consume('alice')])
  expect((await a.consume('alice')).remaining).toBe(7)
  expect((await b.consume('alice')).remaining).toBe(6)
  const seed = await redis.admin.get('shared:seed')
  expect(seed).toMatch(/^[\w-]{22}$/)
  expect(await redis.admin.pttl('shared:seed')).toBe(-1)
  const other = await groupsOf('other')
  expect(await redis.admin.get('other:seed')).not.toBe(seed)
  expect(other.size).toBe(KEYS.length)
})

test('packed options are checked by name', () => {
  const client = connect()
  expect(() => new RedisStore({ client, packed: { seed: '' } })).toThrow(
    /`packed.seed` must be a non-empty string; got ""/,
  )
  expect(
    () => new RedisStore({ client, packed: { sed: 'x' } as unknown as { seed: string } }),
  ).toThrow(ConfigError)
  expect(
    () => new RedisStore({ client, packed: { sed: 'x' } as unknown as { seed: string } }),
  ).toThrow('unknown option `sed` for RedisStore `packed` (value "x")')
})
