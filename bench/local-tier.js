'use strict'
// The local tier on a hot key under its limit, from one Node process with 1,000 decisions in
// flight: decisions per second and Redis commands per decision (MONITOR, without the commands
// scripts run: the `lua` lines), beside RedisStore without the tier, rate-limiter-flexible's
// RateLimiterRedis with inMemoryBlockOnConsumed, and ioredis's own ceiling (EVALSHA of
// `return 1`, auto-pipelined), all in the same run; then 10,000 keys decided 20 times each.
// Commands include the refunds of close(). Starts its own redis-server on a free port.
// Run: node bench/local-tier.js  (after npm run build)
const { once } = require('node:events')
const { Redis } = require('ioredis')
const { createLimiter, localTier } = require('@sluice/core')
const { RedisStore } = require('@sluice/redis')
const { RateLimiterRedis } = require('rate-limiter-flexible')
const { throughput, table, fmt, median, writeResult, startRedisServer, envCount } = require('./lib')

const OPS = envCount('BENCH_TIER_OPS', 200_000)
const ROUNDS = envCount('BENCH_TIER_ROUNDS', 3)
const IN_FLIGHT = 1000
// Well above the decisions of a run (a hot key under its limit); the tier's largest lease is 2%
// of it (20,000 with the default counts), as by default.
const LIMIT = Math.max(1_000_000, 5 * OPS)
const WINDOW = '1h'
const MANY_KEYS = envCount('BENCH_TIER_KEYS', 10_000)
const MANY_ROUNDS = 20

/** Decisions `throughput` makes for `total`: whole batches of IN_FLIGHT. */
const decided = (total) => Math.ceil(total / IN_FLIGHT) * IN_FLIGHT

/** Resolves once every client is connected (its ready check is not counted as a decision's). */
function allReady(clients) {
  return Promise.all(clients.map((c) => (c.status === 'ready' ? null : once(c, 'ready'))))
}

/** Commands clients send while `work` runs, as MONITOR sees them, less those scripts ran. */
async function commandsDuring(port, work) {
  const source = new Redis({ port })
  const monitor = await source.monitor()
  let commands = 0
  monitor.on('monitor', (_time, _args, from) => {
    if (from !== 'lua') commands++
  })
  await work()
  // MONITOR lines arrive after the replies: wait for a marker sent last.
  // No ready check: its INFO would be counted too.
  const marker = new Redis({ port, enableReadyCheck: false })
  await new Promise((resolve) => {
    monitor.on('monitor', (_time, args) => {
      if (args[0] === 'echo' && args[1] === 'bench-local-tier-end') resolve()
    })
    marker.echo('bench-local-tier-end')
  })
  for (const c of [marker, monitor, source]) c.disconnect()
  return commands - 1 // the marker
}

async function main() {
  const redis = await startRedisServer()
  const { port } = redis
  const admin = new Redis({ port })
  const clients = []
  const client = () => {
    const c = new Redis({ port, enableAutoPipelining: true })
    clients.push(c)
    return c
  }
  const sha = await admin.script('LOAD', 'return 1')
  const ceilingClient = client()

  /** Each variant: a fresh limiter over `key`s, and what closes it (the tier's refunds). */
  const variants = [
    {
      name: 'ioredis ceiling: EVALSHA `return 1`',
      make: () => ({ consume: () => ceilingClient.evalsha(sha, 0), close: async () => {} }),
    },
    {
      name: 'Sluice RedisStore (sliding-window)',
      make: () => {
        const limiter = createLimiter({
          store: new RedisStore({ client: client() }),
          limit: LIMIT,
          window: WINDOW,
        })
        return { consume: (key) => limiter.consume(key), close: async () => {} }
      },
    },
    {
      name: 'Sluice localTier(RedisStore) (sliding-window, defaults)',
      make: () => {
        const tier = localTier(new RedisStore({ client: client() }))
        const limiter = createLimiter({ store: tier, limit: LIMIT, window: WINDOW })
        return { consume: (key) => limiter.consume(key), close: () => tier.close() }
      },
    },
    {
      name: 'rate-limiter-flexible RateLimiterRedis, inMemoryBlockOnConsumed',
      make: () => {
        const limiter = new RateLimiterRedis({
          storeClient: client(),
          points: LIMIT,
          duration: 3600,
          inMemoryBlockOnConsumed: LIMIT,
          keyPrefix: `rlf${Math.random()}`,
        })
        return { consume: (key) => limiter.consume(key), close: async () => {} }
      },
    },
  ]

  // Decisions per second: every variant in each round, rounds interleaved, medians reported.
  const runs = variants.map(() => [])
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, variant] of variants.entries()) {
      await admin.flushall()
      const limiter = variant.make()
      await allReady(clients)
      runs[i].push(await throughput(() => limiter.consume('hot'), OPS, IN_FLIGHT))
      await limiter.close()
    }
  }
  // Commands per decision, one more pass each under MONITOR (which slows Redis: not timed).
  const rows = []
  for (const [i, variant] of variants.entries()) {
    await admin.flushall()
    const hotDecisions = decided(OPS / 10)
    const manyDecisions = decided(MANY_KEYS * MANY_ROUNDS)
    const hotLimiter = variant.make()
    await allReady(clients)
    const hot = await commandsDuring(port, async () => {
      await throughput(() => hotLimiter.consume('hot'), hotDecisions, IN_FLIGHT)
      await hotLimiter.close()
    })
    const manyLimiter = variant.make()
    await allReady(clients)
    const many = await commandsDuring(port, async () => {
      await throughput((n) => manyLimiter.consume(`k:${n % MANY_KEYS}`), manyDecisions, IN_FLIGHT)
      await manyLimiter.close()
    })
    rows.push({
      name: variant.name,
      perSecond: median(runs[i]),
      hotCommands: hot / hotDecisions,
      manyCommands: many / manyDecisions,
    })
  }
  const ceiling = rows[0].perSecond
  const text = [
    `A hot key under its limit (limit ${fmt(LIMIT)} per ${WINDOW}), ${fmt(OPS)} decisions with ${IN_FLIGHT} in flight from one process, medians of ${ROUNDS} interleaved rounds; Redis commands per decision counted with MONITOR (without the commands scripts run), close() included, on the hot key (${fmt(decided(OPS / 10))} decisions) and on ${fmt(MANY_KEYS)} keys decided ${MANY_ROUNDS} times each:`,
    '',
    table(
      [
        'limiter',
        'decisions /s',
        'of ioredis ceiling',
        'commands / decision, hot key',
        `commands / decision, ${fmt(MANY_KEYS)} keys`,
      ],
      rows.map((r) => [
        r.name,
        fmt(r.perSecond),
        `${Math.round((100 * r.perSecond) / ceiling)}%`,
        r.hotCommands.toFixed(4),
        r.manyCommands.toFixed(4),
      ]),
    ),
  ].join('\n')
  console.log(text)
  writeResult('local-tier', 'Local tier', text, ['ioredis', 'rate-limiter-flexible'], {
    ops: OPS,
    inFlight: IN_FLIGHT,
    rows,
  })
  for (const c of clients) c.disconnect()
  admin.disconnect()
  await redis.stop()
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
