'use strict'
// Shared helpers of the benchmark scripts: timing, tables, and the machine record.
const os = require('node:os')
const path = require('node:path')
const fs = require('node:fs')
const { execFileSync, spawn } = require('node:child_process')

function machine() {
  return {
    date: new Date().toISOString().slice(0, 10),
    node: process.version,
    cpus: `${os.cpus().length} x ${os.cpus()[0]?.model ?? 'unknown'}`,
    memory: `${Math.round(os.totalmem() / 2 ** 30)} GiB`,
  }
}

function versionOf(name) {
  try {
    return require(`${name}/package.json`).version
  } catch {
    // Packages whose `exports` map hides package.json (express-rate-limit): read it from disk.
    for (const dir of require.resolve.paths(name) ?? []) {
      const file = path.join(dir, name, 'package.json')
      if (fs.existsSync(file)) return JSON.parse(fs.readFileSync(file, 'utf8')).version
    }
    return 'not installed'
  }
}

/** Runs `task(i)` `total` times with `inFlight` awaited together; returns operations per second. */
async function throughput(task, total, inFlight) {
  const start = process.hrtime.bigint()
  for (let done = 0; done < total; done += inFlight) {
    const batch = new Array(inFlight)
    for (let i = 0; i < inFlight; i++) batch[i] = task(done + i)
    await Promise.all(batch)
  }
  const seconds = Number(process.hrtime.bigint() - start) / 1e9
  return total / seconds
}

/** The middle value (the mean of the two middle ones for an even count). */
function median(values) {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

function heapUsed() {
  globalThis.gc?.()
  globalThis.gc?.()
  return process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers
}

function table(headers, rows) {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)))
  const line = (cells) => '| ' + cells.map((c, i) => String(c).padEnd(widths[i])).join(' | ') + ' |'
  return [
    line(headers),
    '|' + widths.map((w) => '-'.repeat(w + 2)).join('|') + '|',
    ...rows.map(line),
  ].join('\n')
}

const fmt = (n) =>
  n >= 1e6 ? `${(n / 1e6).toFixed(2)}M` : n >= 1e3 ? `${(n / 1e3).toFixed(0)}k` : n.toFixed(0)

/** Where result files go: docs/bench/, or BENCH_RESULTS_DIR (a trial run that must not overwrite them). */
function resultsDir() {
  return path.resolve(process.env.BENCH_RESULTS_DIR ?? path.join(__dirname, '../docs/bench'))
}

/**
 * Writes a result file under docs/bench/ with the machine and versions on top; with `data`, also
 * `<name>.json` beside it (the machine, the versions and `data`, the figures unrounded), which
 * bench/charts.js draws.
 */
function writeResult(name, title, body, packages, data) {
  const dir = resultsDir()
  fs.mkdirSync(dir, { recursive: true })
  const m = machine()
  const versions = packages.map((p) => `${p} ${versionOf(p)}`).join(', ')
  const text = `# ${title}\n\nMeasured ${m.date} on ${m.cpus}, ${m.memory}, Node ${m.node}. Packages: ${versions}.\n\n${body}\n`
  fs.writeFileSync(path.join(dir, `${name}.md`), text)
  if (data !== undefined) {
    const record = {
      name,
      title,
      machine: m,
      packages: Object.fromEntries(packages.map((p) => [p, versionOf(p)])),
      data,
    }
    fs.writeFileSync(path.join(dir, `${name}.json`), JSON.stringify(record, null, 2) + '\n')
  }
  return text
}

/**
 * CPU time a process has used so far, in µs (user + system, from /proc: Linux only; undefined
 * elsewhere). The kernel counts it in ticks of 10 ms, fine enough over a run of seconds.
 */
function cpuMicros(pid) {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
    return (Number(fields[11]) + Number(fields[12])) * 10_000
  } catch {
    return undefined
  }
}

/**
 * The test kit's server launchers (packages/testkit/src/servers.ts): the tests' own, so a bench
 * runs the same servers with the same settings, ports and clean-up (every child is killed when
 * this process exits). TypeScript, compiled on the fly by ts-node once; the code measured is
 * dist/.
 */
function testkitServers() {
  if (testkitServers.loaded === undefined) {
    require('ts-node').register({
      transpileOnly: true,
      project: path.join(__dirname, '..', 'tsconfig.json'),
    })
    testkitServers.loaded = require('../packages/testkit/src/servers.ts')
  }
  return testkitServers.loaded
}

/** A private redis-server that keeps nothing on disk (the test kit's startRedis). */
const startRedisServer = () => testkitServers().startRedis()

/** A private memcached (the test kit's startMemcached). */
const startMemcachedServer = () => testkitServers().startMemcached()

/** A positive whole number from the environment, or the default; anything else stops the run. */
function envCount(name, fallback) {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new Error(`${name} must be a positive whole number; got ${JSON.stringify(raw)}`)
  }
  return value
}

/**
 * Starts a child and resolves with it (and the match) once its stdout matches `ready`; rejects
 * if it exits first. Its stderr is shown unless `quiet` (valgrind's banner, for one).
 */
function startChild(command, args, ready, { quiet = false } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', quiet ? 'ignore' : 'inherit'] })
    let out = ''
    const onData = (chunk) => {
      out += chunk
      const match = ready.exec(out)
      if (match) {
        child.stdout.off('data', onData)
        child.stdout.resume() // keep draining so the child never blocks on a full pipe
        resolve({ child, match })
      }
    }
    child.stdout.on('data', onData)
    child.on('exit', (code) =>
      reject(new Error(`${command} ${args.join(' ')} exited with ${code}`)),
    )
  })
}

/** Stops a child from startChild and resolves once it has exited. */
function stopChild(child, signal = 'SIGTERM') {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    child.removeAllListeners('exit')
    child.once('exit', () => resolve())
    child.kill(signal)
  })
}

/** The frameworks and variants bench/http/server.js serves (see its header), in report order. */
const HTTP_FRAMEWORKS = ['fastify', 'koa', 'express']
const HTTP_VARIANTS = [
  'none',
  'floor',
  'sluice-memory',
  'peer-memory',
  'sluice-redis',
  'peer-redis',
  'sluice-memory-reject',
  'peer-memory-reject',
  'sluice-redis-reject',
  'peer-redis-reject',
]

/**
 * Instructions callgrind counts for one run of `script --child <args>` (the benches' counted
 * child processes), under `node --single-threaded` so V8's compiler and collector are counted
 * on the main thread; the dump is kept in `dir`.
 */
function callgrindTotal(script, args, dir) {
  const out = path.join(dir, `${args.join('-')}.out`)
  execFileSync(
    'valgrind',
    [
      '--tool=callgrind',
      `--callgrind-out-file=${out}`,
      process.execPath,
      '--single-threaded',
      script,
      '--child',
      ...args,
    ],
    { stdio: 'ignore' },
  )
  const summary = /^summary:\s*(\d+)/m.exec(fs.readFileSync(out, 'utf8'))
  if (summary === null) throw new Error(`${out}: no summary line`)
  return Number(summary[1])
}

/**
 * Instructions of one counted operation: the child counted with `2n` and with `n` operations
 * (the same start-up and warm-up in each), the difference over `n`.
 */
function countedPerOperation(script, name, n, dir) {
  const count = (ops) => callgrindTotal(script, [name, String(ops)], dir)
  return (count(2 * n) - count(n)) / n
}

/** Runs `child(name, count)` in a counted child (`--child <name> <count>`), else `main()`. */
function childOrMain(child, main) {
  const at = process.argv.indexOf('--child')
  if (at < 0) return main()
  child(process.argv[at + 1], Number(process.argv[at + 2])).catch((error) => {
    console.error(error)
    process.exit(1)
  })
}

module.exports = {
  HTTP_FRAMEWORKS,
  HTTP_VARIANTS,
  startChild,
  stopChild,
  envCount,
  callgrindTotal,
  countedPerOperation,
  childOrMain,
  cpuMicros,
  testkitServers,
  startRedisServer,
  startMemcachedServer,
  machine,
  throughput,
  heapUsed,
  median,
  table,
  fmt,
  writeResult,
  resultsDir,
  versionOf,
}
