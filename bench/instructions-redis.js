'use strict'
// Instructions redis-server executes per decision, counted by valgrind's callgrind: Sluice's
// RedisStore (1,000 in flight, one auto-pipelined ioredis client, a limit no run reaches, as in
// bench/redis.js) beside the state ceiling of the same algorithm (redis-ceiling.js: the same
// keys and state, read and written in Lua with no limiter logic, batched alike). Redis's CPU per
// decision swings with what else a shared machine runs; its instructions hardly do, so a change
// of a few percent in the scripts shows here. The client runs outside valgrind.
// Run: node bench/instructions-redis.js [algorithm ...]  (after npm run build; default every
// algorithm; `gcra+sliding-window` is a limiter of those limits on one key, beside the sum of
// their state ceilings; `token-bucket:wide` a wide budget, 10^12 a month; `<limiter>@packed` the
// same on the packed layout, 4096 groups, which has no state ceiling here: the ceiling's script
// reads and writes keys of their own).
// BENCH_INSTR_REDIS_OPS (30,000) decisions are counted after as many to warm up.
// BENCH_INSTR_REDIS_BASE=<dir> counts another checkout's build too (built, with node_modules),
// in the same run: a change's before and after. BENCH_INSTR_REDIS_KEEP=<dir> keeps each
// server's callgrind dump there (callgrind_annotate --inclusive=yes shows where they went).
// Prints the figures; writes no result file.
const { execFileSync, spawn } = require('node:child_process')
const fs = require('node:fs')
const net = require('node:net')
const os = require('node:os')
const path = require('node:path')
const { setTimeout: delay } = require('node:timers/promises')
const { Redis } = require('ioredis')
const { envCount, startRedisServer, table, throughput } = require('./lib')
const { ceilingOf, loadCeilingScripts, stateOf } = require('./redis-ceiling')

const OPS = envCount('BENCH_INSTR_REDIS_OPS', 30_000)
const IN_FLIGHT = 1000
/**
 * Fewer keys than bench/redis.js's 10,000: under valgrind Redis runs some 50 times slower, and
 * a key must come back before its TTL (about a second at this limit) ends, or every decision
 * would find no state and take another path.
 */
const KEYS = 1000
const BIG = 100_000_000
const ALGORITHMS = ['gcra', 'fixed-window', 'sliding-window', 'token-bucket', 'sliding-log']
const BASE = process.env.BENCH_INSTR_REDIS_BASE
const KEEP = process.env.BENCH_INSTR_REDIS_KEEP

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })
}

/** redis-server under callgrind, and a function that reads its instructions since `zero()`. */
async function countedRedis(dir) {
  const port = await freePort()
  const child = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      `--callgrind-out-file=${path.join(dir, 'cg.%p')}`,
      'redis-server',
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
    ],
    { stdio: 'ignore' },
  )
  const control = (flag) =>
    execFileSync('callgrind_control', [flag, String(child.pid)], { stdio: 'ignore' })
  let dumps = 0
  for (let tries = 0; ; tries++) {
    const probe = new Redis({ port, lazyConnect: true, retryStrategy: () => null })
    probe.on('error', () => {})
    try {
      await probe.connect()
      await probe.ping()
      probe.disconnect()
      break
    } catch (error) {
      probe.disconnect()
      if (tries > 100) throw error
      await delay(200)
    }
  }
  return {
    port,
    zero: () => control('-z'),
    /** Instructions since the last zero (callgrind's summary of a dump). */
    read() {
      control('-d')
      const file = path.join(dir, `cg.${child.pid}.${++dumps}`)
      const summary = /^summary: (\d+)/m.exec(fs.readFileSync(file, 'utf8'))
      return Number(summary[1])
    },
    stop: () => child.kill('SIGTERM'),
  }
}

/** EVALSHA and EVAL calls so far, from INFO commandstats. */
async function scriptCalls(client) {
  const info = await client.info('commandstats')
  let calls = 0
  for (const m of info.matchAll(/^cmdstat_(?:evalsha|eval):calls=(\d+)/gm)) calls += Number(m[1])
  return calls
}

/** Warms up, then counts OPS decisions of `decide(clientKey)`: instructions and script calls. */
async function count(redis, client, decide) {
  await throughput((n) => decide(`user:${n % KEYS}`), OPS, IN_FLIGHT)
  const callsBefore = await scriptCalls(client)
  redis.zero()
  await throughput((n) => decide(`user:${n % KEYS}`), OPS, IN_FLIGHT)
  const instructions = redis.read()
  const calls = (await scriptCalls(client)) - callsBefore
  return { perDecision: instructions / OPS, perCall: OPS / calls }
}

/** A limiter's name without its layout (`@packed`), and whether it is packed. */
function layoutOf(name) {
  const [limiter, layout] = name.split('@')
  return { limiter, packed: layout === 'packed' }
}

/**
 * Sluice's limiter of `name` from the build at `root`; `a+b` is one of those limits on each key
 * (several limits), on keys of their own or (`@packed`) on the packed layout.
 */
function sluiceOf(root, client, name) {
  const { createLimiter } = require(path.join(root, 'packages/core'))
  const { RedisStore } = require(path.join(root, 'packages/redis'))
  const { limiter: algorithm, packed } = layoutOf(name)
  // `<algorithm>:wide` is a wide budget (10^12 a month, as in bench/redis.js).
  // An algorithm that comes again (`gcra+gcra`) gets one more hour of window each time: two
  // limits alike are refused (they would share one state).
  const limitOf = (name, i = 0, parts = [name]) => {
    const [base, wide] = name.split(':')
    if (wide === 'wide') return { algorithm: base, limit: 1e12, window: '31d' }
    const hours = 1 + parts.slice(0, i).filter((part) => part === name).length
    return { algorithm: name, limit: name === 'sliding-log' ? 1_000_000 : BIG, window: `${hours}h` }
  }
  const parts = algorithm.split('+')
  const limits =
    parts.length === 1
      ? limitOf(algorithm)
      : { limits: parts.map((name, i) => ({ name: `limit${i + 1}`, ...limitOf(name, i, parts) })) }
  const store = new RedisStore({ client, packed: packed ? { groups: 4096, seed: 'bench' } : false })
  // Under valgrind a script call takes some 50 times as long: no call may time out.
  return createLimiter({ store, ...limits, timeoutMs: 60_000 })
}

async function measureSluice(dir, root, algorithm) {
  const redis = await countedRedis(dir)
  const client = new Redis({ port: redis.port, enableAutoPipelining: true })
  try {
    const limiter = sluiceOf(root, client, algorithm)
    return await count(redis, client, (key) => limiter.consume(key))
  } finally {
    client.disconnect()
    redis.stop()
  }
}

/** The state ceiling of `algorithm`; of several limits (`a+b`), the sum of theirs. */
async function measureCeilings(dir, algorithm) {
  const parts = []
  for (const part of algorithm.split('+')) parts.push(await measureCeiling(dir, part))
  return {
    perDecision: parts.reduce((sum, part) => sum + part.perDecision, 0),
    perCall: parts[0].perCall,
  }
}

async function measureCeiling(dir, algorithm) {
  // The counted server first: its port cannot then be the probe's, which a client of the probe
  // (stateOf's MONITOR) might still be reconnecting to once the probe has stopped.
  const redis = await countedRedis(dir)
  const client = new Redis({ port: redis.port, enableAutoPipelining: true })
  try {
    const state = await stateOnProbe(algorithm)
    const shas = await loadCeilingScripts(client)
    const ceiling = ceilingOf(client, shas[state.type], state)
    return await count(redis, client, ceiling)
  } finally {
    client.disconnect()
    redis.stop()
  }
}

/**
 * The state exactly as this build writes it, watched (MONITOR) on a server of its own outside
 * valgrind: what the ceiling then reads and writes on the counted one.
 */
async function stateOnProbe(algorithm) {
  const probe = await startRedisServer()
  const probeClient = new Redis({ port: probe.port })
  try {
    // Connected and past its ready check (an INFO) before the MONITOR starts: a monitor line
    // that comes while ioredis closes the monitor connection is an error it throws.
    await probeClient.ping()
    const own = sluiceOf(path.join(__dirname, '..'), probeClient, algorithm)
    return await stateOf(probe.port, own, 'user:probe')
  } finally {
    probeClient.disconnect()
    await probe.stop()
  }
}

async function main() {
  const algorithms = process.argv.slice(2).filter((a) =>
    layoutOf(a)
      .limiter.split('+')
      .every((part) => ALGORITHMS.includes(part.split(':')[0])),
  )
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-instr-redis-'))
  const rows = []
  try {
    for (const algorithm of algorithms.length > 0 ? algorithms : ALGORITHMS) {
      const sluice = await measureSluice(dir, path.join(__dirname, '..'), algorithm)
      const base = BASE ? await measureSluice(dir, path.resolve(BASE), algorithm) : undefined
      const ceiling = layoutOf(algorithm).packed ? undefined : await measureCeilings(dir, algorithm)
      const k = (n) => `${(n / 1000).toFixed(1)}k`
      rows.push([
        algorithm,
        k(sluice.perDecision),
        ...(base ? [k(base.perDecision)] : []),
        ceiling ? k(ceiling.perDecision) : '',
        ceiling ? `${Math.round((100 * ceiling.perDecision) / sluice.perDecision)}%` : '',
        `${sluice.perCall.toFixed(1)} / ${ceiling ? ceiling.perCall.toFixed(1) : ''}`,
      ])
      console.error(`${algorithm}: done`)
    }
  } finally {
    if (KEEP) {
      fs.mkdirSync(KEEP, { recursive: true })
      for (const file of fs.readdirSync(dir))
        fs.copyFileSync(path.join(dir, file), path.join(KEEP, file))
    }
    fs.rmSync(dir, { recursive: true, force: true })
  }
  console.log(
    table(
      [
        'algorithm',
        'Sluice: Redis instructions per decision',
        ...(BASE ? [`the build at ${BASE}`] : []),
        'state ceiling',
        'ceiling / Sluice',
        'decisions per script call (Sluice / ceiling)',
      ],
      rows,
    ),
  )
  process.exit(0)
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
