'use strict'
// What a shared limit costs an edge request: store round trips per decision and ms per request,
// for RedisStore on @upstash/redis through the test kit's REST gateway (Upstash's protocol, a
// local redis-server behind it), in Node and in workerd (Miniflare), and for DurableObjectStore
// in workerd; each beside the same request with no limiter. Local loopback: the figures are the
// cost Sluice adds, not a network's latency. Run: node bench/edge.js (after npm run build).
const path = require('node:path')
const { build } = require('esbuild')
const { createLimiter } = require('@sluice/core')
const { RedisStore } = require('@sluice/redis')
const { table, writeResult, median, envCount } = require('./lib')

const REQUESTS = envCount('BENCH_EDGE_REQUESTS', 300)
const ROUNDS = 3
const LIMITS = [
  { limit: 100, window: '1s' },
  { limit: 10_000, window: '1h' },
]

/** A TypeScript module of the test kit, bundled to CommonJS (its packages left to require). */
async function loadTs(file) {
  // Beside node_modules, so that its requires resolve.
  const out = path.join(
    __dirname,
    '../node_modules/.cache/sluice-bench',
    `${path.basename(file)}.js`,
  )
  await build({
    entryPoints: [file],
    bundle: true,
    platform: 'node',
    format: 'cjs',
    packages: 'external',
    outfile: out,
    logLevel: 'silent',
  })
  return require(out)
}

/** ms per call of `task(i)`, calls one after another: the median of ROUNDS rounds, after a warm-up. */
async function msPer(task) {
  const rounds = []
  let n = 0
  for (let i = 0; i < REQUESTS / 5; i++) await task(n++)
  for (let round = 0; round < ROUNDS; round++) {
    const start = performance.now()
    for (let i = 0; i < REQUESTS; i++) await task(n++)
    rounds.push((performance.now() - start) / REQUESTS)
  }
  return { ms: median(rounds), calls: n }
}

const ip = (i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`
const round2 = (x) => Math.round(x * 100) / 100

async function nodeRows(upstash) {
  const { client, gateway } = upstash
  const sent = () => gateway.requests.single + gateway.requests.pipeline
  const { ms: floor } = await msPer(() =>
    fetch(gateway.url, {
      method: 'POST',
      headers: { authorization: `Bearer ${gateway.token}` },
      body: '["PING"]',
    }).then((r) => r.text()),
  )
  const rows = [{ where: 'Node', store: 'none (one REST PING)', limits: 0, ms: floor, trips: 1 }]
  for (const limits of [LIMITS.slice(0, 1), LIMITS]) {
    const limiter = createLimiter({ limits, store: new RedisStore({ client }) })
    await limiter.consume('warm-up')
    const before = sent()
    const { ms, calls } = await msPer((i) => limiter.consume(`n${limits.length}:${ip(i)}`))
    const trips = (sent() - before) / calls
    rows.push({
      where: 'Node',
      store: 'RedisStore, @upstash/redis',
      limits: limits.length,
      ms,
      trips,
    })
  }
  // Over the limit: the block cache answers without a round trip until the retry time.
  const limiter = createLimiter({ limit: 5, window: '1h', store: new RedisStore({ client }) })
  for (let i = 0; i < 6; i++) await limiter.consume('over')
  const before = sent()
  const { ms, calls } = await msPer(() => limiter.consume('over'))
  rows.push({
    where: 'Node',
    store: 'RedisStore, @upstash/redis, key over its limit',
    limits: 1,
    ms,
    trips: (sent() - before) / calls,
  })
  return rows
}

async function workerdRows(upstash, bundleWorker) {
  const { Miniflare } = require('miniflare')
  const [doScript, upScript] = await Promise.all([
    bundleWorker(path.join(__dirname, 'edge/do-worker.ts')),
    bundleWorker(path.join(__dirname, 'edge/upstash-worker.ts'), true),
  ])
  const compatibilityDate = '2025-04-01'
  const mf = new Miniflare({
    workers: [
      {
        name: 'do',
        modules: true,
        script: doScript,
        compatibilityDate,
        durableObjects: { SLUICE_LIMITER: 'SluiceLimiterObject' },
      },
      {
        name: 'up',
        modules: true,
        script: upScript,
        compatibilityDate,
        compatibilityFlags: ['nodejs_compat'],
        bindings: {
          UPSTASH_REDIS_REST_URL: upstash.gateway.url,
          UPSTASH_REDIS_REST_TOKEN: upstash.gateway.token,
        },
      },
    ],
  })
  try {
    const [durable, rest] = await Promise.all([mf.getWorker('do'), mf.getWorker('up')])
    const send = async (worker, url, i) => {
      const response = await worker.fetch(url, { headers: { 'cf-connecting-ip': ip(i) } })
      await response.text()
      return response
    }
    await send(durable, 'https://edge.test/', 0)
    await send(rest, 'https://edge.test/', 0)
    const { ms: floor } = await msPer((i) => send(durable, 'https://edge.test/plain', i))
    let subrequests = 0
    const { ms: doMs, calls: doCalls } = await msPer(async (i) => {
      const response = await send(durable, 'https://edge.test/', i + 1)
      subrequests += Number(response.headers.get('x-subrequests'))
    })
    const { gateway } = upstash
    const before = gateway.requests.single + gateway.requests.pipeline
    const { ms: upMs, calls: upCalls } = await msPer((i) => send(rest, 'https://edge.test/', i + 1))
    const trips = gateway.requests.single + gateway.requests.pipeline - before
    return [
      { where: 'workerd', store: 'none (no limiter)', limits: 0, ms: floor, trips: 0 },
      {
        where: 'workerd',
        store: 'DurableObjectStore',
        limits: 2,
        ms: doMs,
        trips: subrequests / doCalls,
      },
      {
        where: 'workerd',
        store: 'RedisStore, @upstash/redis',
        limits: 2,
        ms: upMs,
        trips: trips / upCalls,
      },
    ]
  } finally {
    await mf.dispose()
  }
}

async function main() {
  const kit = path.join(__dirname, '../packages/testkit/src')
  const { upstashUnderTest } = await loadTs(path.join(kit, 'upstash-gateway.ts'))
  const { bundleWorker } = await loadTs(path.join(kit, 'workerd.ts'))
  const upstash = await upstashUnderTest({ retry: false })
  try {
    const rows = [...(await nodeRows(upstash)), ...(await workerdRows(upstash, bundleWorker))]
    const body = [
      `${REQUESTS} requests one after another, ${ROUNDS} rounds (the median), a new client address per request unless over its limit; limits: 100 a second, plus 10,000 an hour where 2. The REST endpoint is the test kit's gateway (packages/testkit/src/upstash-gateway.ts) on loopback, in front of a local redis-server: the ms are Sluice's and the gateway's own cost, not a network's.`,
      '',
      table(
        ['runtime', 'store', 'limits', 'ms per request', 'store round trips per decision'],
        rows.map((r) => [r.where, r.store, r.limits, r.ms.toFixed(2), r.trips.toFixed(2)]),
      ),
    ].join('\n')
    console.log(body)
    writeResult(
      'edge',
      'A shared limit at the edge',
      body,
      ['@upstash/redis', 'miniflare'],
      rows.map((r) => ({ ...r, ms: round2(r.ms), trips: round2(r.trips) })),
    )
  } finally {
    await upstash.close()
  }
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
