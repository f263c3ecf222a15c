'use strict'
// A flood of client keys aimed at one group of a packed RedisStore (RedisStoreOptions.packed):
// keys chosen so that FNV-1a of the key, the packed layout's group function before it was
// keyed, falls in group 0 of 4096, against as many random keys. The group is now a keyed hash
// under the store's seed, so the aimed keys spread like random ones. For scale, the same keys
// all in one hash (groups: 1): what an aimed flood did when the group could be computed.
// Run: node bench/packed-flood.js (after npm run build); BENCH_FLOOD_KEYS (default 8000),
// BENCH_FLOOD_ROUNDS (default 5). Writes docs/bench/packed-flood.{md,json}.
const { Redis } = require('ioredis')
const { createLimiter } = require('@sluice/core')
const { RedisStore } = require('@sluice/redis')
const { envCount, median, startRedisServer, table, writeResult } = require('./lib')

const KEYS = envCount('BENCH_FLOOD_KEYS', 8000)
const ROUNDS = envCount('BENCH_FLOOD_ROUNDS', 5) // at most 100 (the limit per key)
const GROUPS = 4096

/** FNV-1a (32 bits) of the UTF-16 code units: the unkeyed group function an attacker aims at. */
function fnv1a(key) {
  let hash = 0x811c9dc5
  for (let i = 0; i < key.length; i++) {
    hash ^= key.charCodeAt(i)
    hash = Math.imul(hash, 0x01000193)
  }
  return hash >>> 0
}

/** `count` keys whose FNV-1a falls in group 0 of `groups`, found as an attacker would. */
function aimedKeys(count, groups) {
  const keys = []
  const started = performance.now()
  for (let i = 0; keys.length < count; i++) {
    const key = `x${i.toString(36)}`
    if (fnv1a(key) % groups === 0) keys.push(key)
  }
  return { keys, ms: performance.now() - started }
}

const randomKeys = (count) =>
  Array.from({ length: count }, () => `r${Math.random().toString(36).slice(2, 10)}`)

/** µs Redis spent in scripts per decision since the last CONFIG RESETSTAT, and its slowest script call. */
async function redisCost(admin, decisions) {
  const stats = await admin.info('commandstats')
  let usec = 0
  for (const m of stats.matchAll(/^cmdstat_(?:eval|evalsha):calls=\d+,usec=(\d+)/gm)) {
    usec += Number(m[1])
  }
  const scripts = (await admin.slowlog('GET', -1)).filter((entry) =>
    /^eval/i.test(String(entry[3][0])),
  )
  const slowest = Math.max(0, ...scripts.map((entry) => Number(entry[2])))
  return { usPerDecision: usec / decisions, slowestUs: slowest }
}

/** Fields of the largest hash the store keeps, and the bytes of all its hashes per key. */
async function hashes(admin, prefix, keys) {
  let largest = 0
  let bytes = 0
  for (const key of await admin.keys(`${prefix}:{%g*`)) {
    largest = Math.max(largest, await admin.hlen(key))
    bytes += Number(await admin.memory('USAGE', key, 'SAMPLES', '0'))
  }
  return { largest, bytesPerKey: bytes / keys }
}

async function measure(admin, client, name, keys, groups) {
  const prefix = `flood-${name}`
  const limiter = createLimiter({
    store: new RedisStore({ client, prefix, blockCache: false, packed: { groups } }),
    algorithm: 'gcra',
    // Each key keeps its state (a field) for the whole run: what makes a hash large.
    limit: 100,
    window: '1h',
  })
  await limiter.consume('warm-up')
  const times = []
  const usPerCall = []
  const slowest = []
  await admin.config('SET', 'slowlog-max-len', '100000')
  for (let round = 0; round < ROUNDS; round++) {
    await admin.config('SET', 'slowlog-log-slower-than', '0')
    await admin.slowlog('RESET')
    await admin.config('RESETSTAT')
    const started = performance.now()
    for (let i = 0; i < keys.length; i += 200) {
      await Promise.all(keys.slice(i, i + 200).map((key) => limiter.consume(key)))
    }
    times.push(((performance.now() - started) * 1000) / keys.length)
    const cost = await redisCost(admin, keys.length)
    usPerCall.push(cost.usPerDecision)
    slowest.push(cost.slowestUs)
  }
  return {
    name,
    groups,
    usPerDecision: median(times),
    redisUsPerDecision: median(usPerCall),
    slowestUs: median(slowest),
    ...(await hashes(admin, prefix, keys.length)),
  }
}

async function main() {
  const redis = await startRedisServer()
  const admin = new Redis({ port: redis.port })
  const client = new Redis({ port: redis.port, enableAutoPipelining: true })
  try {
    const aimed = aimedKeys(KEYS, GROUPS)
    const random = randomKeys(KEYS)
    const results = [
      await measure(admin, client, 'random', random, GROUPS),
      await measure(admin, client, 'aimed', aimed.keys, GROUPS),
      await measure(admin, client, 'one-hash', aimed.keys, 1),
    ]
    const base = results[0]
    const rows = results.map((r) => [
      r.name === 'random'
        ? `${KEYS} random keys, ${GROUPS} groups`
        : r.name === 'aimed'
          ? `${KEYS} keys aimed at one group, ${GROUPS} groups`
          : `the same keys in one hash (groups: 1)`,
      r.usPerDecision.toFixed(1),
      (r.usPerDecision / base.usPerDecision).toFixed(2),
      r.redisUsPerDecision.toFixed(2),
      (r.redisUsPerDecision / base.redisUsPerDecision).toFixed(2),
      String(r.largest),
      r.bytesPerKey.toFixed(0),
    ])
    const body = [
      `Packed RedisStore (gcra), one consume per key, 200 at a time, median of ${ROUNDS} rounds. The aimed keys took ${(aimed.ms / 1000).toFixed(1)} s to find (FNV-1a, the group function before the seed).`,
      '',
      table(
        [
          'keys',
          'µs per decision',
          'x random',
          'Redis µs per decision',
          'x random',
          'largest hash (fields)',
          'Redis bytes per key',
        ],
        rows,
      ),
    ].join('\n')
    console.log(body)
    writeResult('packed-flood', 'A flood aimed at one group of a packed store', body, ['ioredis'], {
      keys: KEYS,
      groups: GROUPS,
      aimedSearchMs: aimed.ms,
      results,
    })
  } finally {
    client.disconnect()
    admin.disconnect()
    await redis.stop()
  }
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
