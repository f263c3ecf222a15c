'use strict'
// Decisions per second of MemcachedStore beside RedisStore in the same run, each on its own
// server process started here on a free loopback port. The Redis column is left out (with a
// note) when @sluice/redis is not built or redis-server is missing.
// Run: node bench/memcached.js  (after npm run build)
const { createLimiter } = require('@sluice/core')
const { MemcachedStore } = require('@sluice/memcached')
const {
  throughput,
  table,
  fmt,
  writeResult,
  startRedisServer,
  startMemcachedServer,
  envCount,
} = require('./lib')

const OPS = envCount('BENCH_MC_OPS', 40_000)
const IN_FLIGHT = envCount('BENCH_MC_IN_FLIGHT', 50)
const BIG = 100_000_000 // never limited: every request takes the admit (write) path
const ALGORITHMS = ['fixed-window', 'sliding-window', 'token-bucket', 'gcra']

async function redisSide() {
  let RedisStore, Redis
  try {
    ;({ RedisStore } = require('@sluice/redis'))
    ;({ Redis } = require('ioredis'))
  } catch (error) {
    return {
      note: `Redis column skipped: @sluice/redis is not built (${error.code ?? error.message}).`,
    }
  }
  let server
  try {
    server = await startRedisServer()
  } catch (error) {
    return { note: `Redis column skipped: redis-server could not start (${error.message}).` }
  }
  const client = new Redis({ port: server.port, host: '127.0.0.1' })
  const store = new RedisStore({ client })
  return {
    store,
    stop: async () => {
      client.disconnect()
      await server.stop()
    },
  }
}

async function measure(store, algorithm, hot) {
  const limiter = createLimiter({ algorithm, limit: BIG, window: '1h', store })
  const run = `${Date.now().toString(36)}:${algorithm}`
  let failed = 0
  const consume = (i) =>
    limiter.consume(hot ? `hot:${run}` : `user:${run}:${i}`).catch(() => {
      failed++
    })
  await throughput(consume, Math.min(2000, OPS), IN_FLIGHT) // warm-up: connections, scripts
  failed = 0
  const rate = await throughput(consume, OPS, IN_FLIGHT)
  return { rate, failed }
}

async function main() {
  const memcached = await startMemcachedServer()
  const mcStore = new MemcachedStore({ servers: `127.0.0.1:${memcached.port}` })
  const redis = await redisSide()
  const rows = []
  const data = [] // the same cells, unrounded, for docs/bench/memcached.json
  try {
    for (const algorithm of ALGORITHMS) {
      for (const hot of [false, true]) {
        const mc = await measure(mcStore, algorithm, hot)
        const rd = redis.store ? await measure(redis.store, algorithm, hot) : undefined
        const failures = (r) => (r.failed > 0 ? ` (${r.failed} failed)` : '')
        rows.push([
          algorithm,
          hot ? 'one hot key' : 'distinct keys',
          fmt(mc.rate) + failures(mc),
          rd ? fmt(rd.rate) + failures(rd) : 'n/a',
          rd ? `${(mc.rate / rd.rate).toFixed(2)}x` : 'n/a',
        ])
        data.push({
          algorithm,
          keys: hot ? 'hot' : 'distinct',
          memcached: mc.rate,
          memcachedFailed: mc.failed,
          redis: rd ? rd.rate : null,
          redisFailed: rd ? rd.failed : null,
        })
      }
    }
  } finally {
    await mcStore.close()
    await memcached.stop()
    await redis.stop?.()
  }
  const body = table(
    ['algorithm', 'keys', 'MemcachedStore ops/s', 'RedisStore ops/s', 'memcached / redis'],
    rows,
  )
  const note =
    `\n\n${fmt(OPS)} decisions per cell, ${IN_FLIGHT} in flight from one process, one local ` +
    'server each, limits high enough that every request is admitted (the write path). ' +
    'MemcachedStore: counters take two round trips (multi-get, then increment), meters two ' +
    "(multi-get, then compare-and-swap) plus one more per lost race, and one hot key's meter " +
    'updates queue up within a process (so its rate is one update per two round trips); ' +
    'RedisStore: one script call. ' +
    '"failed" counts calls that ended in a StoreError (compare-and-swap contention past ' +
    '`casAttempts`).' +
    (redis.note ? `\n\n${redis.note}` : '')
  console.log(
    writeResult(
      'memcached',
      'Decisions per second: MemcachedStore beside RedisStore',
      body + note,
      ['@sluice/memcached', '@sluice/redis', 'memjs', 'ioredis'],
      { ops: OPS, inFlight: IN_FLIGHT, rows: data },
    ),
  )
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
