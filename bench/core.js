'use strict'
// Decisions per second (hot key, one million keys) and heap bytes per key, for every
// algorithm on the memory store, beside rate-limiter-flexible's RateLimiterMemory in the
// same process run. Run: node --expose-gc bench/core.js  (after npm run build)
const { createLimiter, MemoryStore, ALGORITHMS } = require('@sluice/core')
const { RateLimiterMemory } = require('rate-limiter-flexible')
const { throughput, heapUsed, table, fmt, writeResult } = require('./lib')

const HOT_OPS = Number(process.env.BENCH_HOT_OPS ?? 1_000_000)
const KEYS = Number(process.env.BENCH_KEYS ?? 1_000_000)
const IN_FLIGHT = 100
const BIG = 100_000_000 // never limited: both libraries take the admit path

function sluice(algorithm) {
  const store = new MemoryStore({ maxKeys: KEYS })
  const limit = algorithm === 'sliding-log' ? 10 : BIG
  return { limiter: createLimiter({ algorithm, limit, window: '1h', store }), store }
}

function flexible() {
  // RateLimiterMemory rejects its promise when limited; at this limit it never is.
  return new RateLimiterMemory({ points: BIG, duration: 3600 })
}

async function measure(name, makeConsume) {
  let consume = makeConsume()
  const hot = await throughput(() => consume('hot'), HOT_OPS, IN_FLIGHT)
  consume = makeConsume()
  const before = heapUsed()
  const insert = await throughput((i) => consume(`user:${i}`), KEYS, IN_FLIGHT)
  const bytes = (heapUsed() - before) / KEYS
  const update = await throughput((i) => consume(`user:${i}`), KEYS, IN_FLIGHT)
  consume = null
  return { name, hot, insert, update, bytes }
}

async function main() {
  if (!globalThis.gc) console.warn('run with --expose-gc for stable memory figures')
  const results = []
  const peer = await measure('rate-limiter-flexible (RateLimiterMemory)', () => {
    const rl = flexible()
    return (key) => rl.consume(key)
  })
  for (const algorithm of ALGORITHMS) {
    if (algorithm === 'sliding-log') continue // memory grows with the limit; measured below at limit 10
    results.push(
      await measure(`sluice ${algorithm}`, () => {
        const { limiter } = sluice(algorithm)
        return (key) => limiter.consume(key)
      }),
    )
  }
  results.push(
    await measure('sluice sliding-log (limit 10)', () => {
      const { limiter } = sluice('sliding-log')
      let i = 0
      return (key) => limiter.consume(key === 'hot' ? `hot${i++ % 10_000}` : key)
    }),
  )
  const rows = [peer, ...results].map((r) => [
    r.name,
    fmt(r.hot),
    `${(r.hot / peer.hot).toFixed(2)}x`,
    fmt(r.insert),
    fmt(r.update),
    `${(r.update / peer.update).toFixed(2)}x`,
    r.bytes.toFixed(0),
    `${(r.bytes / peer.bytes).toFixed(2)}x`,
  ])
  const body = table(
    [
      'limiter',
      'hot key ops/s',
      'vs peer',
      `${fmt(KEYS)} keys: insert ops/s`,
      'update ops/s',
      'vs peer',
      'heap B/key',
      'vs peer',
    ],
    rows,
  )
  const note = `\n\n${fmt(HOT_OPS)} decisions on one hot key and ${fmt(KEYS)} distinct keys (first touch, then a second pass), ${IN_FLIGHT} in flight, limits high enough that every request is admitted. sliding-log's hot-key row spreads over 10,000 keys because one key admits only 10.`
  console.log(
    writeResult(
      'core',
      'Decisions per second and memory per key (memory store)',
      body + note,
      ['@sluice/core', 'rate-limiter-flexible'],
      {
        hotOps: HOT_OPS,
        keys: KEYS,
        inFlight: IN_FLIGHT,
        rows: [peer, ...results].map((r) => ({
          name: r.name,
          peer: r === peer,
          hot: r.hot,
          insert: r.insert,
          update: r.update,
          bytesPerKey: r.bytes,
        })),
      },
    ),
  )
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
