import { createLimiter } from '@sluice/core'
import { RedisStore } from '@sluice/redis'
import {
  startRedis,
  startRedisSentinel,
  type RedisSentinel,
  type RedisServer,
} from '@sluice/testkit'
import { Redis } from 'ioredis'

// docs/redis.md shows a client that finds its master through Sentinel: the store works on it
// as on any ioredis client, and its state lands on the master the sentinel names.
let master: RedisServer
let sentinel: RedisSentinel
const clients: Redis[] = []

beforeAll(async () => {
  master = await startRedis()
  sentinel = await startRedisSentinel(master)
})

afterAll(async () => {
  for (const client of clients) client.disconnect()
  await sentinel?.stop()
  await master?.stop()
})

test('through a Sentinel-resolved client a limit holds, with its state on the master', async () => {
  const client = new Redis({
    sentinels: [{ host: sentinel.host, port: sentinel.port }],
    name: sentinel.name,
  })
  const direct = new Redis({ host: master.host, port: master.port })
  clients.push(client, direct)
  for (const algorithm of ['gcra', 'sliding-window'] as const) {
    const limiter = createLimiter({
      store: new RedisStore({ client }),
      algorithm,
      limit: 3,
      // An hour, so a window edge (where a sliding window may admit again) falls inside the
      // five requests almost never.
      window: '1h',
    })
    const allowed: boolean[] = []
    for (let i = 0; i < 5; i++) allowed.push((await limiter.consume(`client-${algorithm}`)).allowed)
    expect(allowed).toEqual([true, true, true, false, false])
  }
  // The sentinel named the master we started: the keys are there.
  expect((await direct.keys('sluice:*')).length).toBeGreaterThanOrEqual(2)
})
