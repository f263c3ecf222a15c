'use strict'
// Where the time of a decision goes, from V8's sampling profiler (node:inspector's, after a
// warm-up) on the path
// measured, and for Redis from the server's own counters: the figures of "Where the time goes"
// in docs/benchmarks.md.
//   memory  in-process createLimiter on a MemoryStore, one hot key, 100 in flight (bench/core.js's
//           perf bar)
//   redis   RedisStore, 1,000 in flight over 10k keys (bench/redis.js's rows); the client's
//           profile, then redis-server's side: INFO commandstats and its CPU per decision, beside
//           the state ceiling of redis-ceiling.js on the same keys
//   http    bench/http/server.js <framework> sluice-memory under autocannon: the inclusive tree
//           of Sluice's hook (the frames of @sluice/* entered from the framework)
// Run: node bench/profile.js [memory|redis|http|fastify|koa|express ...]  (after npm run build; BENCH_PROFILE_ALGORITHM
// picks the algorithm, default gcra; BENCH_PROFILE_KEEP=dir keeps the .cpuprofile files;
// BENCH_PROFILE_NODE_FLAGS passes node flags to the profiled process).
// Shares are of the samples in which the process ran JavaScript or native code (not idle); a
// share under 1% is left out.
const { spawn } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const ALGORITHM = process.env.BENCH_PROFILE_ALGORITHM || 'gcra'
const INTERVAL_US = 100
/**
 * Extra node flags for the child, e.g. BENCH_PROFILE_NODE_FLAGS=--no-turbo-inlining: V8 inlines
 * small functions into their callers, whose self time then holds theirs; without inlining the
 * tree is finer but the code slower.
 */
const NODE_FLAGS = (process.env.BENCH_PROFILE_NODE_FLAGS ?? '').split(' ').filter(Boolean)
const KEYS = 10_000
const BIG = 100_000_000

// ---------------------------------------------------------------------------------------------
// Reading a .cpuprofile

/** Where a frame's code lives: Sluice's packages, a framework or client, Node, V8. */
function ownerOf(url) {
  if (url === '') return 'V8 and native'
  const pkg = /packages\/([\w-]+)\/dist\//.exec(url)
  if (pkg) return `@sluice/${pkg[1]}`
  const dep = /node_modules\/((?:@[\w.-]+\/)?[\w.-]+)\//.exec(url)
  if (dep) return dep[1]
  if (url.startsWith('node:')) return 'Node'
  return path.basename(url)
}

const frameName = (node) => {
  const { functionName, url, lineNumber } = node.callFrame
  const where = url ? `${path.basename(url)}:${lineNumber + 1}` : ''
  return `${functionName || '(anonymous)'}${where ? ` ${where}` : ''}`
}
const IDLE = new Set(['(idle)', '(program)', '(root)'])

function load(file) {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8'))
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const parent = new Map()
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n)
  // Inclusive hits of each node, children first.
  const inclusive = new Map()
  const total = (n) => {
    if (inclusive.has(n.id)) return inclusive.get(n.id)
    let sum = n.hitCount ?? 0
    for (const c of n.children ?? []) sum += total(byId.get(c))
    inclusive.set(n.id, sum)
    return sum
  }
  for (const n of profile.nodes) total(n)
  const busy = profile.nodes
    .filter((n) => !IDLE.has(n.callFrame.functionName))
    .reduce((s, n) => s + (n.hitCount ?? 0), 0)
  return { nodes: profile.nodes, byId, parent, inclusive, busy }
}

const pct = (part, whole) => `${((100 * part) / whole).toFixed(1)}%`

/** The top `n` keys of a Map of counts, as "name share" lines of at least 1% of `whole`. */
function top(counts, whole, n) {
  return [...counts]
    .sort((a, b) => b[1] - a[1])
    .filter(([, c]) => c / whole >= 0.01)
    .slice(0, n)
    .map(([name, c]) => `  ${pct(c, whole).padStart(6)}  ${name}`)
}

const add = (map, key, value) => map.set(key, (map.get(key) ?? 0) + value)

/** Self time by owner and by function, over the whole process. */
function selfReport(p, n = 15) {
  const byOwner = new Map()
  const byFunction = new Map()
  for (const node of p.nodes) {
    if (IDLE.has(node.callFrame.functionName) || !node.hitCount) continue
    add(byOwner, ownerOf(node.callFrame.url), node.hitCount)
    add(byFunction, `${frameName(node)} [${ownerOf(node.callFrame.url)}]`, node.hitCount)
  }
  return [
    `busy samples: ${p.busy} (every ${INTERVAL_US} µs)`,
    'self time by owner:',
    ...top(byOwner, p.busy, 10),
    'self time by function:',
    ...top(byFunction, p.busy, n),
  ]
}

/**
 * The inclusive tree of the frames of `owners` entered from outside them (an adapter's hook
 * called by its framework, a limiter's consume called by the benchmark), without what they
 * call back of the rest of the request (`downstream`: Express's `next`, koa-compose's
 * `dispatch`): their total share, and within it each function's inclusive share (once per call
 * path) and self share.
 */
function entryReport(p, owners, downstream = [], n = 20) {
  const inside = (node) => owners.some((o) => ownerOf(node.callFrame.url) === o)
  const roots = p.nodes.filter((node) => inside(node) && !inside(p.parent.get(node.id) ?? node))
  const skipped = (node) =>
    downstream.some(
      ([owner, name]) =>
        ownerOf(node.callFrame.url) === owner && node.callFrame.functionName === name,
    )
  const rootNames = new Map()
  const inclusive = new Map()
  const self = new Map()
  // Returns the samples of `node`'s subtree, downstream left out; counts each function once.
  const walk = (node, seen) => {
    if (skipped(node)) return 0
    const name = `${frameName(node)} [${ownerOf(node.callFrame.url)}]`
    const next = new Set(seen).add(name)
    let sum = node.hitCount ?? 0
    add(self, name, sum)
    for (const c of node.children ?? []) sum += walk(p.byId.get(c), next)
    if (!seen.has(name)) add(inclusive, name, sum)
    return sum
  }
  let hook = 0
  for (const r of roots) {
    const sum = walk(r, new Set())
    hook += sum
    add(rootNames, frameName(r), sum)
  }
  return [
    `entered ${owners.join(', ')}${downstream.length ? ` (without ${downstream.map(([o, f]) => `${o} ${f}`).join(', ')})` : ''}: ${pct(hook, p.busy)} of busy samples, through:`,
    ...top(rootNames, hook, 5),
    'inclusive, share of that:',
    ...top(inclusive, hook, n),
    'self, share of that:',
    ...top(self, hook, n),
  ]
}

// ---------------------------------------------------------------------------------------------
// Running a child under the profiler

/**
 * Runs `args` (a workload of this file) in a child that profiles itself between its warm-up and
 * its end (see `recording`); resolves with the profile's path and the child's output once it
 * exits. `onReady(port)` drives a server child: its warm-up, SIGUSR2 (start), its load, then
 * SIGTERM (stop, write, exit).
 */
function profiled(args, { onReady } = {}) {
  const dir = process.env.BENCH_PROFILE_KEEP || fs.mkdtempSync(path.join(os.tmpdir(), 'prof-'))
  fs.mkdirSync(dir, { recursive: true })
  const file = path.join(dir, `${args.filter((a) => !a.startsWith('-')).join('-')}.cpuprofile`)
  const child = spawn(process.execPath, [...NODE_FLAGS, '--expose-gc', __filename, ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, BENCH_PROFILE_OUT: file },
  })
  let out = ''
  let ready = false
  child.stdout.on('data', (chunk) => {
    out += chunk
    const match = /ready (\d+)/.exec(out)
    if (match && !ready && onReady) {
      ready = true
      onReady(Number(match[1]), (signal) => child.kill(signal)).then(
        () => child.kill('SIGTERM'),
        (error) => {
          console.error(error)
          child.kill('SIGTERM')
        },
      )
    }
  })
  return new Promise((resolve, reject) => {
    child.on('exit', (code) => {
      if (!fs.existsSync(file)) return reject(new Error(`no profile (exit ${code}): ${out}`))
      resolve({ file, out: out.replace(/ready \d+\n?/, '') })
    })
  })
}

/**
 * V8's sampling profiler in this process (node:inspector): start() after the warm-up, so
 * loading and the first compilations stay out; stop() writes BENCH_PROFILE_OUT.
 */
function recording() {
  const inspector = require('node:inspector')
  const session = new inspector.Session()
  session.connect()
  const post = (method, params) =>
    new Promise((resolve, reject) =>
      session.post(method, params, (error, result) => (error ? reject(error) : resolve(result))),
    )
  return {
    async start() {
      await post('Profiler.enable')
      await post('Profiler.setSamplingInterval', { interval: INTERVAL_US })
      await post('Profiler.start')
    },
    async stop() {
      const { profile } = await post('Profiler.stop')
      fs.writeFileSync(process.env.BENCH_PROFILE_OUT, JSON.stringify(profile))
    },
  }
}

// ---------------------------------------------------------------------------------------------
// The workloads (run in the profiled child: node bench/profile.js --run <path> ...)

async function runMemory() {
  const { createLimiter, MemoryStore } = require('@sluice/core')
  const { throughput } = require('./lib')
  const limiter = createLimiter({
    store: new MemoryStore(),
    algorithm: ALGORITHM,
    limit: BIG,
    window: '1h',
  })
  await throughput(() => limiter.consume('hot'), 1_000_000, 100)
  const profiler = recording()
  await profiler.start()
  const rate = await throughput(() => limiter.consume('hot'), 5_000_000, 100)
  await profiler.stop()
  console.log(`${ALGORITHM}, one hot key, 100 in flight: ${Math.round(rate)} decisions/s`)
}

async function runRedis(port) {
  const { Redis } = require('ioredis')
  const { createLimiter } = require('@sluice/core')
  const { RedisStore } = require('@sluice/redis')
  const { throughput } = require('./lib')
  const client = new Redis({ port: Number(port), enableAutoPipelining: true })
  const limiter = createLimiter({
    store: new RedisStore({ client, blockCache: false }),
    algorithm: ALGORITHM,
    limit: ALGORITHM === 'sliding-log' ? 1_000_000 : BIG,
    window: '1h',
  })
  await throughput((n) => limiter.consume(`user:${n % KEYS}`), 20_000, 1000)
  const profiler = recording()
  await profiler.start()
  const rate = await throughput((n) => limiter.consume(`user:${n % KEYS}`), 300_000, 1000)
  await profiler.stop()
  console.log(`${ALGORITHM}, 1,000 in flight over 10k keys: ${Math.round(rate)} decisions/s`)
  client.disconnect()
}

// ---------------------------------------------------------------------------------------------
// The reports

async function memory() {
  const { file, out } = await profiled(['--run', 'memory'])
  const p = load(file)
  return [
    `## memory decision (${out.trim()})`,
    ...selfReport(p),
    ...entryReport(p, ['@sluice/core']),
  ]
}

/** Calls and µs of the commands run since RESETSTAT, per decision. */
async function commandStats(admin, decisions) {
  const info = await admin.info('commandstats')
  const lines = []
  for (const m of info.matchAll(/^cmdstat_([\w|]+):calls=(\d+),usec=(\d+)/gm)) {
    if (/config|info/.test(m[1])) continue
    const calls = Number(m[2]) / decisions
    const us = Number(m[3]) / decisions
    lines.push(`  ${m[1].padEnd(10)} ${calls.toFixed(3)} calls, ${us.toFixed(2)} µs per decision`)
  }
  return lines
}

async function redis() {
  const { Redis } = require('ioredis')
  const { createLimiter } = require('@sluice/core')
  const { RedisStore } = require('@sluice/redis')
  const { cpuMicros, startRedisServer, throughput } = require('./lib')
  const { ceilingOf, loadCeilingScripts, stateOf } = require('./redis-ceiling')
  const server = await startRedisServer()
  const admin = new Redis({ port: server.port })
  try {
    await admin.config('RESETSTAT')
    const cpuBefore = cpuMicros(server.pid())
    const { file, out } = await profiled(['--run', 'redis', String(server.port)])
    const decisions = 320_000 // with the warm-up
    const sluiceCpu = (cpuMicros(server.pid()) - cpuBefore) / decisions
    const sluiceStats = await commandStats(admin, decisions)
    // The state ceiling on the same keys, same client kind, same in flight.
    const client = new Redis({ port: server.port, enableAutoPipelining: true })
    const limiter = createLimiter({
      store: new RedisStore({ client, blockCache: false }),
      algorithm: ALGORITHM,
      limit: ALGORITHM === 'sliding-log' ? 1_000_000 : BIG,
      window: '1h',
    })
    const state = await stateOf(server.port, limiter, 'user:0')
    const shas = await loadCeilingScripts(admin)
    const ceiling = ceilingOf(client, shas[state.type], state)
    await throughput((n) => ceiling(`user:${n % KEYS}`), 20_000, 1000)
    await admin.config('RESETSTAT')
    const ceilingBefore = cpuMicros(server.pid())
    const rate = await throughput((n) => ceiling(`user:${n % KEYS}`), 300_000, 1000)
    const ceilingCpu = (cpuMicros(server.pid()) - ceilingBefore) / 300_000
    const ceilingStats = await commandStats(admin, 300_000)
    client.disconnect()
    const p = load(file)
    return [
      `## Redis decision, client side (${out.trim()}; profiled without the warm-up)`,
      ...selfReport(p),
      ...entryReport(p, ['@sluice/core', '@sluice/redis']),
      `## Redis decision, server side`,
      `redis-server CPU per decision (/proc, warm-up included): Sluice ${sluiceCpu.toFixed(2)} µs, state ceiling ${ceilingCpu.toFixed(2)} µs (${Math.round(rate)} decisions/s)`,
      'INFO commandstats, Sluice (EVALSHA includes the commands it runs):',
      ...sluiceStats,
      'INFO commandstats, state ceiling:',
      ...ceilingStats,
    ]
  } finally {
    admin.disconnect()
    await server.stop()
  }
}

/** What a middleware calls to run the rest of the request: not the hook's own work. */
const DOWNSTREAM = {
  fastify: [['fastify', 'next']], // the hook's done() runs the next hook and the handler
  koa: [['koa-compose', 'dispatch']],
  express: [['router', 'next']],
}

async function http(framework) {
  const { execFile } = require('node:child_process')
  const autocannon = require.resolve('autocannon/autocannon.js')
  const requests = framework === 'express' ? 20_000 : 60_000
  const drive = (port, amount) =>
    new Promise((resolve, reject) =>
      execFile(
        process.execPath,
        [autocannon, '-c', '50', '-a', String(amount), `http://127.0.0.1:${port}/`],
        { maxBuffer: 1 << 24 },
        (error) => (error ? reject(error) : resolve()),
      ),
    )
  const { file } = await profiled(['--serve', framework], {
    onReady: async (port, signal) => {
      await drive(port, requests)
      signal('SIGUSR2')
      await new Promise((resolve) => setTimeout(resolve, 200))
      await drive(port, requests)
    },
  })
  const p = load(file)
  return [
    `## HTTP hook, ${framework} (sluice-memory, ${2 * requests} requests, 50 connections)`,
    ...selfReport(p, 12),
    ...entryReport(p, [`@sluice/${framework}`, '@sluice/core'], DOWNSTREAM[framework]),
  ]
}

async function main() {
  const asked = process.argv.slice(2)
  const parts = asked.length > 0 ? asked : ['memory', 'redis', 'http']
  const lines = []
  for (const part of parts) {
    if (part === 'memory') lines.push(...(await memory()), '')
    else if (part === 'redis') lines.push(...(await redis()), '')
    else if (part === 'http') {
      for (const framework of ['fastify', 'koa', 'express'])
        lines.push(...(await http(framework)), '')
    } else if (['fastify', 'koa', 'express'].includes(part)) {
      lines.push(...(await http(part)), '')
    } else throw new Error(`unknown part ${part}: memory, redis, http or a framework`)
  }
  console.log(lines.join('\n'))
}

if (process.argv[2] === '--serve') {
  // bench/http/server.js <framework> sluice-memory, profiled from SIGUSR2 to SIGTERM.
  const profiler = recording()
  process.on('SIGUSR2', () => profiler.start())
  process.on('SIGTERM', () => profiler.stop().then(() => process.exit(0)))
  const server = path.join(__dirname, 'http/server.js')
  process.argv = [process.argv[0], server, process.argv[3], 'sluice-memory']
  require(server)
} else if (process.argv[2] === '--run') {
  const run = { memory: runMemory, redis: runRedis }[process.argv[3]]
  run(process.argv[4]).then(
    () => process.exit(0),
    (error) => {
      console.error(error)
      process.exit(1)
    },
  )
} else if (require.main === module) {
  main().catch((error) => {
    console.error(error)
    process.exit(1)
  })
}
