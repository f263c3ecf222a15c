'use strict'
// Decisions per second through one Redis from one Node process, sequential and with 1,000 in
// flight, beside rate-limiter-flexible's RateLimiterRedis in the same run, beside the ceiling of
// each algorithm's state change (redis-ceiling.js: the same keys and state read and written in
// Lua with no limiter logic, batched alike, in the same rounds) and beside the raw ceiling
// (redis-benchmark: EVALSHA of a trivial script, same server); Redis bytes per key
// (used_memory over a million keys, and over 100,000 10-byte keys, beside the peer; MEMORY USAGE);
// Redis commands the block cache saves under a flood. Starts its own redis-server on a free
// port. Run: node bench/redis.js  (after npm run build)
const { execFileSync } = require('node:child_process')
const { Redis } = require('ioredis')
const { createLimiter } = require('@sluice/core')
const { RedisStore } = require('@sluice/redis')
const { RateLimiterRedis } = require('rate-limiter-flexible')
const { throughput, table, fmt, median, writeResult, startRedisServer, envCount } = require('./lib')
const { ceilingOf, loadCeilingScripts, stateOf, BATCH } = require('./redis-ceiling')

const SEQUENTIAL_OPS = envCount('BENCH_REDIS_SEQ_OPS', 20_000)
const IN_FLIGHT_OPS = envCount('BENCH_REDIS_OPS', 200_000)
const IN_FLIGHT = 1000
const ROUNDS = envCount('BENCH_REDIS_ROUNDS', 3)
const MILLION = envCount('BENCH_REDIS_KEYS', 1_000_000)
// The memory target's case: 100,000 clients with 10-byte keys (`u:` and 8 digits).
const SMALL_KEYS = envCount('BENCH_REDIS_SMALL_KEYS', 100_000)
const SMALL_KEY_ALGORITHMS = ['gcra', 'token-bucket', 'fixed-window']
const PACKED_GROUPS = [4096, 65_536]
const CAS_OPS = envCount('BENCH_REDIS_CAS_OPS', 100_000)

const KEYS = 10_000
const BIG = 100_000_000 // never limited: every decision takes the admit path and writes
// A busy shared machine can hold a batch past the default 1 s; a timeout would end the run, not
// measure it (a deadline costs the same at any timeoutMs: one queue per value).
const TIMEOUT_MS = 60_000

/** redis-benchmark's EVALSHA of `return 1`: what one Redis does with no work in the script. */
function rawCeiling(port, sha, clients, pipeline) {
  const out = execFileSync(
    'redis-benchmark',
    [
      '-p',
      String(port),
      '-n',
      String(IN_FLIGHT_OPS),
      '-c',
      String(clients),
      '-P',
      String(pipeline),
      '-q',
      'EVALSHA',
      sha,
      '0',
    ],
    { encoding: 'utf8' },
  )
  const match = /([\d.]+) requests per second/.exec(out.replace(/\r/g, '\n'))
  return match ? Number(match[1]) : NaN
}

/**
 * This process's CPU time (user + system) since `start` (process.cpuUsage), in µs: what the
 * client spent, which unlike decisions per second does not depend on how the two processes
 * shared the cores.
 */
function clientCpuUs(start) {
  const { user, system } = process.cpuUsage(start)
  return user + system
}

/** redis-server's CPU time so far (user + system), in µs: INFO cpu. */
async function serverCpuUs(admin) {
  const info = await admin.info('cpu')
  const of = (name) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)[1])
  return (of('used_cpu_user') + of('used_cpu_sys')) * 1e6
}

/**
 * Bench only: answers the store's wide plans (Planner, private) with the route they took before
 * the wide script, core's transitions by compare-and-set, so one run measures both.
 */
function compareAndSetOnly(store) {
  const planner = store.planner
  const plan = planner.plan.bind(planner)
  const cas = { engine: 'cas', layout: 'wide', script: undefined }
  const plans = new WeakMap()
  planner.plan = (policies) => {
    let own = plans.get(policies)
    if (own === undefined) {
      own = plan(policies)
      if (own.wide) own = { ...own, decide: cas, adjust: cas }
      plans.set(policies, own)
    }
    return own
  }
}

/**
 * Bench only: sends the store's plans of several policies where they went before their flat
 * script (the route of rewards and penalties: the generic script, or compare-and-set when a
 * packed plan holds a ring), so one run measures both.
 */
function beforeSeveral(store) {
  const planner = store.planner
  const plan = planner.plan.bind(planner)
  const plans = new WeakMap()
  planner.plan = (policies) => {
    let own = plans.get(policies)
    if (own === undefined) {
      own = plan(policies)
      if (policies.length > 1) own = { ...own, decide: own.adjust, own: undefined }
      plans.set(policies, own)
    }
    return own
  }
  return store
}

async function commandCalls(admin) {
  const info = await admin.info('commandstats')
  let calls = 0
  for (const m of info.matchAll(/^cmdstat_(eval|evalsha|rlflx\w*):calls=(\d+)/gm))
    calls += Number(m[2])
  return calls
}

async function main() {
  const redis = await startRedisServer()
  const { port } = redis
  const admin = new Redis({ port })
  const plain = () => new Redis({ port })
  const pipelined = () => new Redis({ port, enableAutoPipelining: true })
  const clients = []
  const track = (c) => (clients.push(c), c)

  const sluice = (client, algorithm = 'gcra', limit) =>
    createLimiter({
      timeoutMs: TIMEOUT_MS,
      store: new RedisStore({ client, blockCache: false }),
      algorithm,
      limit: limit ?? (algorithm === 'sliding-log' ? 1_000_000 : BIG),
      window: '1h',
    })
  const flexible = (client, prefix, points = BIG) =>
    new RateLimiterRedis({ storeClient: client, points, duration: 3600, keyPrefix: prefix })

  const rows = []
  const measure = async (name, consume) => {
    // Warm up (script loads, JIT) before timing.
    await throughput((i) => consume(`warm:${i % KEYS}`), 2000, 100)
    const sequential = await throughput((i) => consume(`user:${i % KEYS}`), SEQUENTIAL_OPS, 1)
    return { name, sequential }
  }

  // Every variant in each round, rounds interleaved, medians reported: one Redis and one Node
  // process share two cores here, and a single run of each drifts by 10% or more.
  const variants = ['gcra', 'fixed-window', 'sliding-window', 'token-bucket', 'sliding-log'].map(
    (algorithm) => ({
      name: `Sluice RedisStore (${algorithm})`,
      algorithm,
      seq: sluice(track(plain()), algorithm),
      par: sluice(track(pipelined()), algorithm),
      // 10 an hour for the million keys: one request each is admitted, and every key's state
      // lives long enough to be counted in used_memory (at the huge limit a meter's is empty
      // again within a millisecond).
      few: sluice(track(pipelined()), algorithm, 10),
    }),
  )
  variants.push({
    name: 'rate-limiter-flexible RateLimiterRedis',
    seq: flexible(track(plain()), 'rlf-seq'),
    par: flexible(track(pipelined()), 'rlf-par'),
    few: flexible(track(pipelined()), 'rlf-few', 10),
  })
  const results = []
  for (const v of variants) {
    const r = await measure(v.name, (k) => v.seq.consume(k))
    r.runs = []
    results.push(r)
  }
  const sha = await admin.script('LOAD', 'return 1')
  // Each algorithm's state as Sluice writes it (one consume of user:0, watched), and a ceiling
  // client of its own for it: the same kind of client as Sluice's in-flight one.
  const shas = await loadCeilingScripts(admin)
  for (const v of variants) {
    if (v.algorithm === undefined) continue
    v.state = await stateOf(port, v.par, 'user:0')
    v.ceiling = ceilingOf(track(pipelined()), shas[v.state.type], v.state)
    await throughput((n) => v.ceiling(`warm:${n % KEYS}`), 2000, 100)
  }
  const ceilings = []
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < variants.length; i++) {
      const { par, ceiling } = variants[i]
      const r = results[i]
      const cpu = process.cpuUsage()
      r.runs.push(
        await throughput((n) => par.consume(`user:${n % KEYS}`), IN_FLIGHT_OPS, IN_FLIGHT),
      )
      ;(r.cpuRuns ??= []).push(clientCpuUs(cpu) / IN_FLIGHT_OPS)
      if (ceiling === undefined) continue
      const stateCpu = process.cpuUsage()
      ;(r.stateRuns ??= []).push(
        await throughput((n) => ceiling(`user:${n % KEYS}`), IN_FLIGHT_OPS, IN_FLIGHT),
      )
      ;(r.stateCpuRuns ??= []).push(clientCpuUs(stateCpu) / IN_FLIGHT_OPS)
    }
    ceilings.push(rawCeiling(port, sha, 50, 1))
  }
  for (const r of results) {
    r.inFlight = median(r.runs)
    r.clientCpuUs = median(r.cpuRuns)
    if (r.stateRuns) r.stateCeiling = median(r.stateRuns)
    if (r.stateCpuRuns) r.stateClientCpuUs = median(r.stateCpuRuns)
  }
  // One hot key, then one million distinct keys on an empty Redis (used_memory before and
  // after, per key), once each, 1,000 in flight.
  const usedMemory = async () => Number(/used_memory:(\d+)/.exec(await admin.info('memory'))[1])
  for (let i = 0; i < variants.length; i++) {
    const par = variants[i].par
    await admin.flushall()
    results[i].hot = await throughput(() => par.consume('hot'), IN_FLIGHT_OPS, IN_FLIGHT)
    await admin.flushall()
    const before = await usedMemory()
    const few = variants[i].few
    results[i].million = await throughput((n) => few.consume(`m:${n}`), MILLION, IN_FLIGHT)
    results[i].usedMemoryPerKey = ((await usedMemory()) - before) / MILLION
  }
  // used_memory per key at 100,000 keys of 10 bytes, one request each (limit 10 an hour): the
  // key names as an application with short client keys has them (the million above are 3-8).
  const tenBytes = (n) => `u:${String(n).padStart(8, '0')}`
  const smallKeys = []
  for (let i = 0; i < variants.length; i++) {
    const peerRow = results[i].name.startsWith('rate-limiter-flexible')
    if (!peerRow && !SMALL_KEY_ALGORITHMS.some((a) => results[i].name.endsWith(`(${a})`))) continue
    await admin.flushall()
    const before = await usedMemory()
    const few = variants[i].few
    await throughput((n) => few.consume(tenBytes(n)), SMALL_KEYS, IN_FLIGHT)
    const perKey = ((await usedMemory()) - before) / SMALL_KEYS
    smallKeys.push({ name: results[i].name, peer: peerRow, usedMemoryPerKey: perKey })
  }
  // The packed layout (RedisStoreOptions.packed), at the default groups and at far too many.
  const packedStore = (groups) =>
    new RedisStore({ client: track(pipelined()), blockCache: false, packed: { groups } })
  for (const groups of PACKED_GROUPS) {
    for (const algorithm of [...SMALL_KEY_ALGORITHMS, 'sliding-window']) {
      const few = createLimiter({
        timeoutMs: TIMEOUT_MS,
        store: packedStore(groups),
        algorithm,
        limit: 10,
        window: '1h',
      })
      await admin.flushall()
      const before = await usedMemory()
      await throughput((n) => few.consume(tenBytes(n)), SMALL_KEYS, IN_FLIGHT)
      const perKey = ((await usedMemory()) - before) / SMALL_KEYS
      const name = `Sluice RedisStore (${algorithm}, packed, ${fmt(groups)} groups)`
      smallKeys.push({ name, peer: false, usedMemoryPerKey: perKey })
    }
  }
  // The packed layout and wide budgets beside keys of their own, 1,000 in flight over 10k keys,
  // in interleaved rounds: packed Lua (gcra, sliding-window), and the paths core decides
  // in the process by compare-and-set (a packed limiter of gcra and sliding-window, a wide
  // budget).
  const perKey = (algorithm) => sluice(track(pipelined()), algorithm)
  const packedLimiter = (algorithm) =>
    createLimiter({
      timeoutMs: TIMEOUT_MS,
      store: packedStore(4096),
      algorithm,
      limit: BIG,
      window: '1h',
    })
  const twoLimits = [
    { name: 'meter', algorithm: 'gcra', limit: BIG, window: '1h' },
    { name: 'window', algorithm: 'sliding-window', limit: BIG, window: '1h' },
  ]
  const threeLimits = [
    ...twoLimits,
    { name: 'minute', algorithm: 'fixed-window', limit: BIG, window: '1m' },
  ]
  // `before`: the route several limits took before their flat script (beforeSeveral).
  const perKeyLimits = (limits, before = false) => {
    const store = new RedisStore({ client: track(pipelined()), blockCache: false })
    return createLimiter({
      timeoutMs: TIMEOUT_MS,
      store: before ? beforeSeveral(store) : store,
      limits,
    })
  }
  const packedLimits = (limits, before = false) => {
    const store = packedStore(4096)
    return createLimiter({
      timeoutMs: TIMEOUT_MS,
      store: before ? beforeSeveral(store) : store,
      limits,
    })
  }
  // A wide budget (10^12 a month): its script, or (`before`) the route it took before it had
  // one, compare-and-set, for the same-run comparison.
  const wide = (algorithm, before = false) => {
    const store = new RedisStore({ client: track(pipelined()), blockCache: false })
    if (before) compareAndSetOnly(store)
    return createLimiter({ timeoutMs: TIMEOUT_MS, store, algorithm, limit: 1e12, window: '31d' })
  }
  const layouts = [
    ['gcra, keys of their own', perKey('gcra')],
    ['gcra, packed (Lua)', packedLimiter('gcra'), 0],
    ['gcra, 10^12 a month: wide (one script)', wide('gcra'), 0],
    ['gcra, 10^12 a month: wide (compare-and-set, before)', wide('gcra', true), 0],
    ['token-bucket, keys of their own', perKey('token-bucket')],
    ['token-bucket, 10^12 a month: wide (one script)', wide('token-bucket'), 4],
    ['sliding-window, keys of their own', perKey('sliding-window')],
    ['sliding-window, packed (Lua)', packedLimiter('sliding-window'), 6],
    // Several limits on one key, each beside one gcra limit on the same layout.
    ['gcra and sliding-window, keys of their own', perKeyLimits(twoLimits), 0],
    ['gcra, sliding-window and fixed-window, keys of their own', perKeyLimits(threeLimits), 0],
    ['gcra and sliding-window, packed', packedLimits(twoLimits), 1],
    ['gcra, sliding-window and fixed-window, packed', packedLimits(threeLimits), 1],
    ['gcra and sliding-window, keys, generic script (before)', perKeyLimits(twoLimits, true), 0],
    [
      'gcra, sliding-window and fixed-window, keys, generic (before)',
      perKeyLimits(threeLimits, true),
      0,
    ],
    ['gcra and sliding-window, packed, compare-and-set (before)', packedLimits(twoLimits, true), 1],
    [
      'gcra, sliding-window and fixed-window, packed, compare-and-set (before)',
      packedLimits(threeLimits, true),
      1,
    ],
  ]
  // In ROUNDS interleaved rounds, medians: one run each read up to 0.2x apart between rows
  // measured a minute apart (the first row's limiter also ran before the process was warm).
  const layoutRuns = layouts.map(() => [])
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, [, limiter]] of layouts.entries()) {
      await admin.flushall()
      await admin.config('RESETSTAT')
      const cpu = await serverCpuUs(admin)
      const rate = await throughput((n) => limiter.consume(`cas:${n % KEYS}`), CAS_OPS, IN_FLIGHT)
      const cpuUs = ((await serverCpuUs(admin)) - cpu) / CAS_OPS
      const calls = (await commandCalls(admin)) / CAS_OPS
      layoutRuns[i].push({ rate, calls, cpuUs })
    }
  }
  const layoutRows = layouts.map(([name, , base], i) => ({
    name: `Sluice RedisStore (${name})`,
    rate: median(layoutRuns[i].map((r) => r.rate)),
    calls: median(layoutRuns[i].map((r) => r.calls)),
    cpuUs: median(layoutRuns[i].map((r) => r.cpuUs)),
    base,
  }))
  await admin.flushall()
  const ceiling = median(ceilings)
  const ceilingPipelined = rawCeiling(port, sha, 1, IN_FLIGHT)
  const peer = results.find((r) => r.name.startsWith('rate-limiter-flexible'))
  for (const r of results) {
    rows.push([
      r.name,
      fmt(r.sequential),
      fmt(r.inFlight),
      r.stateCeiling
        ? `${fmt(r.stateCeiling)} (${Math.round((100 * r.inFlight) / r.stateCeiling)}%)`
        : '',
      r.stateClientCpuUs
        ? `${r.clientCpuUs.toFixed(1)} / ${r.stateClientCpuUs.toFixed(1)}`
        : r.clientCpuUs.toFixed(1),
      `${Math.round((100 * r.inFlight) / ceiling)}%`,
      `${Math.round((100 * r.inFlight) / ceilingPipelined)}%`,
      `${(r.inFlight / peer.inFlight).toFixed(2)}x`,
    ])
  }
  rows.push([
    'raw ceiling: redis-benchmark EVALSHA `return 1`, 50 clients',
    '',
    fmt(ceiling),
    '',
    '',
    '100%',
    '',
    '',
  ])
  rows.push([
    `raw ceiling: redis-benchmark EVALSHA, 1 client, -P ${IN_FLIGHT}`,
    '',
    fmt(ceilingPipelined),
    '',
    '',
    '',
    '100%',
    '',
  ])

  // Bytes per key: MEMORY USAGE of one key as each store leaves it after one request.
  const memory = []
  const client = track(plain())
  const ip = '203.0.113.7'
  const sizeOf = async (pattern) => {
    const [key] = await admin.keys(pattern)
    return Number(await admin.memory('USAGE', key))
  }
  for (const [algorithm, options] of [
    ['gcra', { limit: 100, window: '1s', burst: 6 }],
    ['fixed-window', { limit: 100, window: '1m' }],
    ['token-bucket', { limit: 100, window: '1m' }],
    ['sliding-window', { limit: 100, window: '1m' }],
    ['sliding-log', { limit: 100, window: '1m' }],
  ]) {
    await admin.flushall()
    const limiter = createLimiter({
      timeoutMs: TIMEOUT_MS,
      store: new RedisStore({ client }),
      algorithm,
      ...options,
    })
    await limiter.consume(ip)
    memory.push([`Sluice ${algorithm}`, await sizeOf('sluice:*')])
  }
  await admin.flushall()
  await flexible(client, 'rlflx').consume(ip)
  memory.push(['rate-limiter-flexible RateLimiterRedis', await sizeOf('rlflx:*')])

  // The block cache under a flood: 5 keys, 20,000 requests, limit 100 per hour each.
  const flood = async (blockCache) => {
    const limiter = createLimiter({
      timeoutMs: TIMEOUT_MS,
      store: new RedisStore({ client, blockCache }),
      algorithm: 'gcra',
      limit: 100,
      window: '1h',
    })
    await admin.flushall()
    await admin.config('RESETSTAT')
    const started = process.hrtime.bigint()
    await throughput((i) => limiter.consume(`flood:${i % 5}`), 20_000, 100)
    const seconds = Number(process.hrtime.bigint() - started) / 1e9
    return { calls: await commandCalls(admin), rate: 20_000 / seconds }
  }
  const withCache = await flood(undefined)
  const withoutCache = await flood(false)

  const text = [
    `Decisions per second (limit never reached, ${KEYS} keys, window 1h; with 1,000 in flight, medians of ${ROUNDS} interleaved rounds, the ceilings measured in every round too). The state ceiling is the most one Redis core does for the algorithm's state change with no limiter logic: a Lua script that reads and writes the same keys' state as Sluice leaves it (strings: GET, SET PX; sliding-window's hash: HGETALL, HSET, PEXPIRE; sliding-log's sorted set: ZREMRANGEBYSCORE, ZADD, PEXPIRE), batched as RedisStore batches (a turn's consumes in one EVALSHA, at most ${BATCH}), from the same kind of client with as many in flight, run right after Sluice's in each round; in brackets Sluice's share of it. Client CPU: this process's CPU time (process.cpuUsage) per decision, Sluice's and the ceiling's, medians (it depends far less than rates on how the client and Redis shared the cores):`,
    '',
    table(
      [
        'store',
        'sequential /s',
        `${IN_FLIGHT} in flight /s`,
        'state ceiling /s (Sluice share)',
        'client CPU µs per decision (/ ceiling)',
        'of ceiling (50 clients)',
        `of ceiling (-P ${IN_FLIGHT})`,
        'vs rate-limiter-flexible',
      ],
      rows,
    ),
    '',
    `One hot key (${fmt(IN_FLIGHT_OPS)} decisions, limit never reached) and ${fmt(MILLION)} distinct keys (one decision each, limit 10 an hour, on an empty Redis), ${IN_FLIGHT} in flight, once each; used_memory grown per key over the ${fmt(MILLION)} keys:`,
    '',
    table(
      ['store', 'hot key /s', 'vs peer', `${fmt(MILLION)} keys /s`, 'vs peer', 'used_memory B/key'],
      results.map((r) => [
        r.name,
        fmt(r.hot),
        `${(r.hot / peer.hot).toFixed(2)}x`,
        fmt(r.million),
        `${(r.million / peer.million).toFixed(2)}x`,
        r.usedMemoryPerKey.toFixed(0),
      ]),
    ),
    '',
    `used_memory grown per key over ${fmt(SMALL_KEYS)} distinct 10-byte client keys (\`u:00000000\`, one decision each, limit 10 an hour, on an empty Redis):`,
    '',
    table(
      ['store', 'used_memory B/key', 'vs peer'],
      smallKeys.map((r) => [
        r.name,
        r.usedMemoryPerKey.toFixed(0),
        `${(r.usedMemoryPerKey / smallKeys.find((p) => p.peer).usedMemoryPerKey).toFixed(2)}x`,
      ]),
    ),
    '',
    `The packed layout, wide budgets and several limits per key beside one limit, ${fmt(CAS_OPS)} decisions each, ${IN_FLIGHT} in flight over ${fmt(KEYS)} keys, medians of ${ROUNDS} interleaved rounds ("vs one limit": beside the same algorithm on keys of their own; several limits beside gcra alone on the same layout):`,
    '',
    table(
      [
        'store',
        'decisions /s',
        'vs one limit',
        'scripts per decision',
        'Redis CPU µs per decision',
      ],
      layoutRows.map((r) => [
        r.name,
        fmt(r.rate),
        r.base === undefined ? '' : `${(r.rate / layoutRows[r.base].rate).toFixed(2)}x`,
        r.calls.toFixed(3),
        r.cpuUs.toFixed(1),
      ]),
    ),
    '',
    'Redis bytes per key after one request from 203.0.113.7 (MEMORY USAGE):',
    '',
    table(['store', 'bytes'], memory),
    '',
    'Block cache, 20,000 requests from 5 keys over a limit of 100/h each (gcra):',
    '',
    table(
      ['blockCache', 'Redis script calls', 'decisions /s'],
      [
        ['on (default)', withCache.calls, fmt(withCache.rate)],
        ['off', withoutCache.calls, fmt(withoutCache.rate)],
        ['saved', `${(100 * (1 - withCache.calls / withoutCache.calls)).toFixed(1)}%`, ''],
      ],
    ),
  ].join('\n')
  console.log(text)
  writeResult('redis', 'Redis store', text, ['ioredis', 'rate-limiter-flexible'], {
    keys: KEYS,
    inFlight: IN_FLIGHT,
    rows: results.map((r) => ({
      name: r.name,
      peer: r === peer,
      sequential: r.sequential,
      inFlight: r.inFlight,
      clientCpuUs: r.clientCpuUs,
      ...(r.stateCeiling ? { stateCeiling: r.stateCeiling } : {}),
      ...(r.stateClientCpuUs ? { stateClientCpuUs: r.stateClientCpuUs } : {}),
      hot: r.hot,
      million: r.million,
      usedMemoryPerKey: r.usedMemoryPerKey,
    })),
    million: MILLION,
    smallKeys: { keys: SMALL_KEYS, keyBytes: 10, rows: smallKeys },
    layouts: layoutRows,
    ceiling: { clients50: ceiling, pipelined: ceilingPipelined },
    stateCeiling: {
      batch: BATCH,
      states: variants
        .filter((v) => v.state)
        .map((v) => ({ algorithm: v.algorithm, type: v.state.type, sample: v.state.sample })),
    },
    bytesPerKey: memory.map(([name, bytes]) => ({ name, peer: !name.startsWith('Sluice'), bytes })),
    blockCache: {
      on: { calls: withCache.calls, rate: withCache.rate },
      off: { calls: withoutCache.calls, rate: withoutCache.rate },
    },
  })

  for (const c of clients) c.disconnect()
  admin.disconnect()
  await redis.stop()
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
