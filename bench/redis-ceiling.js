'use strict'
// The ceiling of a Redis decision (bench/redis.js): the most state changes one Redis core does
// when a script only reads and writes the state an algorithm keeps, with no limiter logic
// around it. The same keys, the same state (type, value, TTL: copied from what Sluice wrote),
// read then written in Lua, batched as RedisStore batches (the consumes of one event-loop turn
// in one EVALSHA, at most 32, its default batchSize), through the same kind of client with the
// same number in flight. Sluice's decisions/s over this is the share of the ceiling it reaches.
const { setTimeout: delay } = require('node:timers/promises')
const { Redis } = require('ioredis')

/** RedisStore's default batchSize (packages/redis/src/options.ts). */
const BATCH = 32

// One script per state type. Each reads the state, writes it back with its TTL and replies one
// integer per key, as the batch scripts do (reply shape: a table of integers).
const SCRIPTS = {
  // gcra, token-bucket, leaky-bucket, fixed-window: a string, GET then SET PX.
  string: `local out = {}
for i = 1, #KEYS do
  redis.call('GET', KEYS[i])
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
  out[i] = 1
end
return out`,
  // sliding-window: a hash (its counts), HGETALL then HSET of its fields and PEXPIRE.
  hash: `local out = {}
local unpack = table.unpack or unpack
for i = 1, #KEYS do
  redis.call('HGETALL', KEYS[i])
  redis.call('HSET', KEYS[i], unpack(ARGV, 2))
  redis.call('PEXPIRE', KEYS[i], ARGV[1])
  out[i] = 1
end
return out`,
  // sliding-log: a sorted set of request times, trimmed, ZADD of one entry and PEXPIRE.
  zset: `local out = {}
for i = 1, #KEYS do
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', '(0')
  redis.call('ZADD', KEYS[i], ARGV[2], ARGV[3] .. '/' .. i)
  redis.call('PEXPIRE', KEYS[i], ARGV[1])
  out[i] = 1
end
return out`,
}

/**
 * What Sluice writes for one consume of `key` with `limiter` (MONITOR while it runs): the state
 * key's name as a function of the client key, its type, the value or fields written and the TTL
 * in ms.
 */
async function stateOf(port, limiter, key) {
  const watcher = new Redis({ port, enableReadyCheck: false })
  const monitor = await watcher.monitor()
  const seen = []
  monitor.on('monitor', (_time, args) => seen.push(args))
  await delay(20)
  await limiter.consume(key)
  await delay(50)
  monitor.disconnect()
  watcher.disconnect()
  const writes = seen.filter((a) => /^(set|hset|zadd)$/i.test(a[0]) && a[1].includes(key))
  if (writes.length === 0)
    throw new Error(`no state write seen for ${key}: ${JSON.stringify(seen)}`)
  const [command, stateKey, ...rest] = writes[writes.length - 1]
  const [before, after] = [
    stateKey.slice(0, stateKey.indexOf(key)),
    stateKey.slice(stateKey.indexOf(key) + key.length),
  ]
  const keyOf = (k) => `${before}${k}${after}`
  const admin = new Redis({ port })
  const ttl = Number(await admin.pttl(stateKey))
  admin.disconnect()
  const pexpire = seen.find((a) => /^pexpire$/i.test(a[0]) && a[1] === stateKey)
  const px = (i) => (i >= 0 ? Number(rest[i + 1]) : undefined)
  const ttlMs =
    px(rest.findIndex((a) => /^px$/i.test(a))) ?? (pexpire ? Number(pexpire[2]) : undefined) ?? ttl
  const type = { set: 'string', hset: 'hash', zadd: 'zset' }[command.toLowerCase()]
  const argv =
    type === 'string'
      ? [rest[0], String(Math.max(1, ttlMs))]
      : type === 'hash'
        ? [String(Math.max(1, ttlMs)), ...rest]
        : [String(Math.max(1, ttlMs)), rest[0]]
  return { type, keyOf, argv, sample: { command, key: stateKey, args: rest, ttlMs } }
}

/**
 * A consume-like function that sends the state change of `state` for a client key, batched per
 * event-loop turn as RedisStore does (setImmediate, or at BATCH).
 */
function ceilingOf(client, sha, state) {
  let queue = []
  let scheduled = false
  let batches = 0
  const flush = () => {
    scheduled = false
    if (queue.length > 0) send(queue)
    queue = []
  }
  const send = (batch) => {
    const keys = batch.map((e) => e.key)
    // A log's entries must differ: the batch's id, then the index in the script.
    const argv = state.type === 'zset' ? [...state.argv, `c${batches++}`] : state.argv
    client.evalsha(sha, keys.length, ...keys, ...argv).then(
      () => batch.forEach((e) => e.resolve()),
      (error) => batch.forEach((e) => e.reject(error)),
    )
  }
  return (clientKey) =>
    new Promise((resolve, reject) => {
      queue.push({ key: state.keyOf(clientKey), resolve, reject })
      if (queue.length >= BATCH) {
        const full = queue
        queue = []
        send(full)
      } else if (!scheduled) {
        scheduled = true
        setImmediate(flush)
      }
    })
}

/** Loads the scripts into the server; the SHA of each state type's. */
async function loadCeilingScripts(admin) {
  const shas = {}
  for (const [type, lua] of Object.entries(SCRIPTS)) shas[type] = await admin.script('LOAD', lua)
  return shas
}

module.exports = { stateOf, ceilingOf, loadCeilingScripts, BATCH, SCRIPTS }
