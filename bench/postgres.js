'use strict'
// Decisions per second of PostgresStore beside rate-limiter-flexible's RateLimiterPostgres, on
// one PostgreSQL server started here (initdb into a temp dir, a free loopback port, durable
// settings: fsync and synchronous_commit on), each through a pg Pool of its own with the same
// size. Then every other algorithm (ours only: the peer has fixed-window alone), the atomic
// mechanisms PostgresStore can use, and table bytes per key at 100k keys.
// Run: node bench/postgres.js  (after npm run build)
const { Pool } = require('pg')
const { RateLimiterPostgres } = require('rate-limiter-flexible')
const { createLimiter, ALGORITHMS } = require('@sluice/core')
const { PostgresStore } = require('@sluice/postgres')
const { throughput, table, fmt, writeResult, envCount, testkitServers } = require('./lib')

const KEYS = 10_000
const CONCURRENT_OPS = envCount('BENCH_PG_OPS', 40_000)
const SEQUENTIAL_OPS = envCount('BENCH_PG_SEQUENTIAL_OPS', 2_000)
const IN_FLIGHT = 1000
const POOL_SIZE = 10
const SIZE_KEYS = envCount('BENCH_PG_SIZE_KEYS', 100_000)
const BIG = 100_000_000 // never limited: every request takes the write path

/** Our limiter on `store`, and a consume of key i % KEYS. */
function ours(store, algorithm, run) {
  // sliding-log keeps a timestamp per request in its window: a key here sees a few.
  const limit = algorithm === 'sliding-log' ? 1000 : BIG
  // The peer has no timeout; queued calls of the slow variants must not time out either.
  const limiter = createLimiter({ store, algorithm, limit, window: '1h', timeoutMs: 60_000 })
  return (i) => limiter.consume(`user:${run}:${i % KEYS}`)
}

function peer(pool, tableName) {
  return new Promise((resolve, reject) => {
    const limiter = new RateLimiterPostgres(
      { storeClient: pool, tableName, points: BIG, duration: 3600 },
      (error) => (error ? reject(error) : resolve(limiter)),
    )
  })
}

/** Decisions per second: a warm-up, then `ops` with `inFlight` together. */
async function rate(consume, ops, inFlight) {
  await throughput(consume, Math.min(ops, 2000), inFlight)
  return throughput(consume, ops, inFlight)
}

async function tableBytes(pool, name) {
  const { rows } = await pool.query('SELECT pg_total_relation_size($1::regclass)::float8 AS n', [
    name,
  ])
  return rows[0].n
}

async function main() {
  const server = await testkitServers().startPostgres({
    settings: {
      fsync: 'on',
      synchronous_commit: 'on',
      full_page_writes: 'on',
      shared_buffers: '256MB',
    },
  })
  const ourPool = new Pool({ connectionString: server.url, max: POOL_SIZE })
  const peerPool = new Pool({ connectionString: server.url, max: POOL_SIZE })
  // Idle connections end with an error when the server stops at the end.
  for (const pool of [ourPool, peerPool]) pool.on('error', () => undefined)
  const stores = []
  const storeOf = async (options = {}) => {
    const store = new PostgresStore({ client: ourPool, sweepIntervalMs: false, ...options })
    await store.migrate()
    stores.push(store)
    return store
  }
  const data = { versus: [], algorithms: [], mechanisms: [], bytes: {} }
  try {
    const store = await storeOf()
    const rlf = await peer(peerPool, 'rlflx')

    // 1. fixed-window, the peer's algorithm: in flight together, then one at a time.
    const versus = []
    for (const [label, ops, inFlight] of [
      ['1,000 in flight', CONCURRENT_OPS, IN_FLIGHT],
      ['sequential', SEQUENTIAL_OPS, 1],
    ]) {
      const run = `${label.length}${Date.now().toString(36)}`
      const mine = await rate(ours(store, 'fixed-window', run), ops, inFlight)
      const theirs = await rate((i) => rlf.consume(`user:${run}:${i % KEYS}`), ops, inFlight)
      versus.push([label, fmt(mine), fmt(theirs), `${(mine / theirs).toFixed(2)}x`])
      data.versus.push({ load: label, ops, inFlight, sluice: mine, peer: theirs })
    }

    // 2. Every algorithm, ours only.
    const algorithms = []
    for (const algorithm of ALGORITHMS) {
      const run = `${algorithm}:${Date.now().toString(36)}`
      const together = await rate(ours(store, algorithm, `${run}:t`), CONCURRENT_OPS, IN_FLIGHT)
      const alone = await rate(ours(store, algorithm, `${run}:s`), SEQUENTIAL_OPS, 1)
      algorithms.push([algorithm, fmt(together), fmt(alone)])
      data.algorithms.push({ algorithm, concurrent: together, sequential: alone })
    }

    // 3. The atomic step: compare-and-set (the default), row locks in a transaction every
    //    time (casAttempts: 0), and each without batches (batchSize: 1).
    const mechanisms = []
    for (const [label, options] of [
      ['batched compare-and-set (default)', {}],
      ['batched, row locks every time', { casAttempts: 0 }],
      ['one call per statement pair, compare-and-set', { batchSize: 1, concurrency: POOL_SIZE }],
      [
        'one call per transaction, row locks',
        { batchSize: 1, concurrency: POOL_SIZE, casAttempts: 0 },
      ],
    ]) {
      const variant = await storeOf(options)
      const run = `m${mechanisms.length}:${Date.now().toString(36)}`
      const together = await rate(
        ours(variant, 'fixed-window', `${run}:t`),
        CONCURRENT_OPS,
        IN_FLIGHT,
      )
      const alone = await rate(ours(variant, 'fixed-window', `${run}:s`), SEQUENTIAL_OPS, 1)
      mechanisms.push([label, fmt(together), fmt(alone)])
      data.mechanisms.push({ mechanism: label, options, concurrent: together, sequential: alone })
    }

    // 4. Table bytes per key: SIZE_KEYS fixed-window keys each, in fresh tables.
    const sized = await storeOf({ table: 'sluice_sized' })
    const rlfSized = await peer(peerPool, 'rlflx_sized')
    const fill = (consume) => throughput(consume, SIZE_KEYS, IN_FLIGHT)
    const limiter = createLimiter({
      store: sized,
      algorithm: 'fixed-window',
      limit: BIG,
      window: '1h',
    })
    await fill((i) => limiter.consume(`user:size:${i}`))
    await fill((i) => rlfSized.consume(`user:size:${i}`))
    await ourPool.query('VACUUM ANALYZE sluice_sized')
    await peerPool.query('VACUUM ANALYZE rlflx_sized')
    const rows = async (pool, name) =>
      (await pool.query(`SELECT count(*)::int AS n FROM ${name}`)).rows[0].n
    const ourRows = await rows(ourPool, 'sluice_sized')
    const peerRows = await rows(peerPool, 'rlflx_sized')
    data.bytes = {
      sluiceRows: ourRows,
      peerRows,
      sluice: (await tableBytes(ourPool, 'sluice_sized')) / ourRows,
      peer: (await tableBytes(peerPool, 'rlflx_sized')) / peerRows,
    }

    const body = [
      '**fixed-window beside RateLimiterPostgres** (its only algorithm):',
      '',
      table(['load', 'PostgresStore ops/s', 'RateLimiterPostgres ops/s', 'ratio'], versus),
      '',
      '**Every algorithm** (PostgresStore):',
      '',
      table(['algorithm', '1,000 in flight ops/s', 'sequential ops/s'], algorithms),
      '',
      '**The atomic step** (fixed-window):',
      '',
      table(['mechanism', '1,000 in flight ops/s', 'sequential ops/s'], mechanisms),
      '',
      `**Table bytes per key** at ${fmt(SIZE_KEYS)} fixed-window keys (pg_total_relation_size ` +
        `after VACUUM, heap and primary key index): PostgresStore ${data.bytes.sluice.toFixed(0)} B ` +
        `(${ourRows} rows), RateLimiterPostgres ${data.bytes.peer.toFixed(0)} B (${peerRows} rows).`,
      '',
      `${fmt(CONCURRENT_OPS)} decisions per cell with ${fmt(IN_FLIGHT)} in flight, ` +
        `${fmt(SEQUENTIAL_OPS)} one at a time, over ${fmt(KEYS)} keys, from one process; a pg ` +
        `Pool of ${POOL_SIZE} connections each; PostgresStore with time: 'server' (the default). ` +
        'Limits high enough that every request is admitted (the write path).',
    ].join('\n')
    console.log(
      writeResult(
        'postgres',
        'Decisions per second: PostgresStore beside RateLimiterPostgres',
        body,
        ['@sluice/postgres', 'rate-limiter-flexible', 'pg'],
        { concurrentOps: CONCURRENT_OPS, sequentialOps: SEQUENTIAL_OPS, keys: KEYS, ...data },
      ),
    )
  } finally {
    for (const store of stores) await store.close()
    await ourPool.end()
    await peerPool.end()
    await server.stop()
  }
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
