import { join } from 'node:path'
import {
  bundleWorker,
  upstashUnderTest,
  wellInsideAMinute,
  workerStatuses,
  type UpstashUnderTest,
} from '@sluice/testkit'
import { Miniflare } from 'miniflare'

// RedisStore with the real @upstash/redis client in real workerd (Miniflare, without the
// nodejs_compat flag: the bundle has no Node built-in, or it would not build), through the REST
// gateway to a real redis-server: two Workers (two isolates) share one count.

let upstash: UpstashUnderTest
let mf: Miniflare

beforeAll(async () => {
  upstash = await upstashUnderTest()
  const script = await bundleWorker(join(__dirname, 'fixtures/upstash-worker.ts'))
  const worker = (name: string) => ({
    name,
    modules: true,
    script,
    compatibilityDate: '2025-04-01',
    bindings: {
      UPSTASH_REDIS_REST_URL: upstash.gateway.url,
      UPSTASH_REDIS_REST_TOKEN: upstash.gateway.token,
    },
  })
  mf = new Miniflare({ workers: [worker('edge-a'), worker('edge-b')] })
  await mf.ready
})

afterAll(async () => {
  await mf?.dispose()
  await upstash?.close()
})

test('two Workers on one Upstash endpoint admit exactly the limit of one client', async () => {
  await wellInsideAMinute()
  const [a, b] = await Promise.all([
    workerStatuses(mf, 'edge-a', '203.0.113.7', 30),
    workerStatuses(mf, 'edge-b', '203.0.113.7', 30),
  ])
  const all = [...a, ...b]
  expect([all.filter((s) => s === 200).length, all.filter((s) => s === 429).length]).toEqual([
    20, 40,
  ])
}, 60_000)
