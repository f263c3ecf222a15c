import { createHash } from 'node:crypto'
import { createLimiter } from '@sluice/core'
import { createRulesLimiter } from '@sluice/rules'
import { MemcachedStore } from '@sluice/memcached'
import {
  firstOfEachAdmitted,
  LONE_SURROGATE_KEYS,
  startMemcached,
  type MemcachedServer,
} from '@sluice/testkit'

// Item names on a real memcached: a client key can neither name another limit's state nor
// the hash that stands for a key too long for memcached.
let server: MemcachedServer
let store: MemcachedStore
let run = 0

const sha256 = (text: string): string => createHash('sha256').update(text).digest('base64url')

beforeAll(async () => {
  server = await startMemcached()
})

beforeEach(() => {
  store = new MemcachedStore({ servers: server.servers, prefix: `kc${process.pid}-${run++}` })
})

afterEach(() => store.close())

afterAll(async () => {
  await server?.stop()
})

test('a client key cannot name the item of a rules state key', async () => {
  const rules = createRulesLimiter({
    rules: {
      domain: 'api',
      descriptors: [{ key: 'user', rate_limit: { unit: 'hour', requests_per_unit: 1 } }],
    },
    store,
  })
  const plain = createLimiter({ limit: 1, window: '1h', store })
  // The hashes a rules state item is named by, as the old and the new layout make them.
  for (const text of ['api\u0000api|user=42', '3:apiapi|user=42']) {
    expect((await plain.consume(`@${sha256(text)}`)).allowed).toBe(true)
  }
  expect((await rules.consume([['user', '42']])).decision?.allowed).toBe(true)
  expect((await rules.consume([['user', '42']])).decision?.allowed).toBe(false)
})

test('a 300-byte key and the literal #<its sha256> are two buckets', async () => {
  const limiter = createLimiter({ algorithm: 'token-bucket', limit: 1, window: '1h', store })
  const long = 'k'.repeat(300)
  const forged = `#${sha256(long)}`
  expect((await limiter.consume(long)).allowed).toBe(true)
  expect((await limiter.consume(forged)).allowed).toBe(true)
  expect((await limiter.consume(long)).allowed).toBe(false)
})

test('keys that differ only in lone halves of UTF-16 pairs are buckets of their own', async () => {
  const limiter = createLimiter({ limit: 1, window: '1h', store })
  expect(await firstOfEachAdmitted(limiter)).toEqual(LONE_SURROGATE_KEYS.map(() => true))
})
