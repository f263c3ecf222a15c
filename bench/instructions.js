'use strict'
// Instructions each HTTP server executes per request, counted by valgrind's callgrind, outside
// V8's compiler and garbage collector (see BURSTS): the no-limiter server, the floor (the three
// headers alone), Sluice's memory store and the peer's, for Express, Fastify and Koa, and for
// Nest on Express and on Fastify (@sluice/nest's ThrottlerGuard beside @nestjs/throttler's).
// BENCH_INSTR_FRAMEWORKS="nest-express,nest-fastify" counts those frameworks only and keeps the
// others' figures from the last result file. The count depends far less than requests per second on what else
// the machine is doing, so it shows a few percent that a shared machine's noise hides.
// Needs valgrind (Debian: apt-get install valgrind). Run: node bench/instructions.js (after npm
// run build); BENCH_INSTR_ROUNDS (default 3) runs per server, BENCH_INSTR_REQUESTS (default per
// framework, see REQUESTS) counted per run, BENCH_INSTR_PARALLEL (2) servers at a time (how
// busy the cores are changes how many requests a server reads per event-loop turn, so compare
// counts made with the same setting).
const { execFile, execFileSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const {
  envCount,
  HTTP_FRAMEWORKS,
  HTTP_VARIANTS,
  median,
  resultsDir,
  startChild,
  stopChild,
  table,
  writeResult,
} = require('./lib')

const ROUNDS = envCount('BENCH_INSTR_ROUNDS', 3)
/**
 * Requests to warm up with, then to count, per framework. A window must hold enough requests
 * that the garbage collector's and the optimising compiler's bursts (tens of millions of
 * instructions each) average out: 5,000 Fastify requests counted right after 5,000 others ran
 * 82.9k and then 57.8k instructions each in one process. Express's requests are ten times
 * heavier, and 5,000 of them repeat within 1%.
 */
const REQUESTS = {
  fastify: envCount('BENCH_INSTR_REQUESTS', 20_000),
  koa: envCount('BENCH_INSTR_REQUESTS', 20_000),
  express: envCount('BENCH_INSTR_REQUESTS', 5000),
  'nest-fastify': envCount('BENCH_INSTR_REQUESTS', 10_000),
  'nest-express': envCount('BENCH_INSTR_REQUESTS', 5000),
}
const PARALLEL = envCount('BENCH_INSTR_PARALLEL', 2)
const ALL_FRAMEWORKS = [...HTTP_FRAMEWORKS, 'nest-fastify', 'nest-express']
/** Admitting (a limit no run reaches) and rejecting (every request after the first gets 429). */
const ALL_VARIANTS = [
  ...HTTP_VARIANTS.filter((variant) => !variant.includes('redis')),
  'floor-reject',
]
/**
 * BENCH_INSTR_ONLY="fastify:sluice-memory,sluice-memory-reject" counts those alone and prints
 * them, leaving the result file as it is (for a quick look at one change). It may also name
 * `least` (Express, Fastify and Koa): the least limiter that sets the floor's headers (a sliding
 * window in a Map, bench/http/server.js), which the full count leaves out; and `store-hook`
 * (Fastify): Sluice's memory store called from a bare hook, without the HTTP pipeline.
 */
const ONLY_VARIANTS = [...ALL_VARIANTS, 'least', 'store-hook']
const ONLY = parseOnly(process.env.BENCH_INSTR_ONLY)
const SUBSET = process.env.BENCH_INSTR_FRAMEWORKS
  ? process.env.BENCH_INSTR_FRAMEWORKS.split(',').filter((f) => ALL_FRAMEWORKS.includes(f))
  : undefined
const FRAMEWORKS = ONLY ? ONLY.frameworks : (SUBSET ?? ALL_FRAMEWORKS)
const VARIANTS = ONLY ? ONLY.variants : ALL_VARIANTS
const LABELS = {
  none: 'no limiter',
  floor: 'three headers only (floor)',
  'floor-reject': 'the same 429 from a bare middleware (429 floor)',
  'sluice-memory': 'Sluice memory',
  'sluice-memory-reject': 'Sluice memory, rejecting (429)',
}

function parseOnly(value) {
  if (value === undefined || value === '') return undefined
  const [frameworks, variants] = value.split(':')
  const only = {
    frameworks: frameworks.split(',').filter((f) => ALL_FRAMEWORKS.includes(f)),
    variants: variants.split(',').filter((v) => ONLY_VARIANTS.includes(v)),
  }
  // Nest's servers (http/nest.js) have no least limiter: they would count a server without one.
  const nest = only.frameworks.filter((f) => !HTTP_FRAMEWORKS.includes(f))
  if (only.variants.includes('least') && nest.length > 0)
    throw new Error(
      `BENCH_INSTR_ONLY: 'least' is counted for ${HTTP_FRAMEWORKS.join(', ')}, not ${nest.join(', ')}`,
    )
  if (only.variants.includes('store-hook') && only.frameworks.some((f) => f !== 'fastify'))
    throw new Error(`BENCH_INSTR_ONLY: 'store-hook' is counted for fastify alone`)
  return only
}
const PEERS = {
  express: 'express-rate-limit',
  fastify: '@fastify/rate-limit',
  koa: 'koa-ratelimit (memory driver)',
  'nest-fastify': '@nestjs/throttler',
  'nest-express': '@nestjs/throttler',
}
const SERVER = path.join(__dirname, 'http/server.js')
const AUTOCANNON = require.resolve('autocannon/autocannon.js')

function hasValgrind() {
  try {
    execFileSync('valgrind', ['--version'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

/** autocannon sending exactly `amount` requests over 50 connections. */
function load(port, amount) {
  return new Promise((resolve, reject) => {
    const args = [AUTOCANNON, '-c', '50', '-a', String(amount), `http://127.0.0.1:${port}/`]
    execFile(process.execPath, args, { maxBuffer: 1 << 24 }, (error) =>
      error ? reject(error) : resolve(),
    )
  })
}

function control(flag, pid) {
  execFileSync('callgrind_control', [flag, String(pid)], { stdio: 'ignore' })
}

/** Servers under callgrind now, killed if the run ends early. */
const running = new Set()
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL')
})

/**
 * V8's own bursts in a dump, by the inclusive count of the functions that start them: the
 * optimising and lazy compilers (runtime entries, called from JavaScript) and the garbage
 * collector (every stop-the-world collection, and the incremental marking steps run between
 * allocations). None was seen calling another. In one process, whether TurboFan recompiles a hot
 * function or a full collection runs inside the counted window is luck: in half the Fastify
 * runs the compiler alone added 5-6.5k instructions per request (docs/benchmarks.md).
 */
const BURSTS = {
  compiler: [/v8::internal::Runtime_CompileOptimized\(/, /v8::internal::Runtime_CompileLazy\(/],
  gc: [/v8::internal::Heap::CollectGarbage\(/, /v8::internal::IncrementalMarking::Step\(/],
}

/** Total instructions of a dump and those of V8's compiler and garbage collector (see BURSTS). */
function breakdown(dump) {
  const text = execFileSync('callgrind_annotate', ['--inclusive=yes', '--threshold=100', dump], {
    encoding: 'utf8',
    maxBuffer: 1 << 28,
  })
  const lines = text.split('\n').map((line) => /^\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*)$/.exec(line))
  const inclusive = (pattern) => {
    const hit = lines.find((m) => m !== null && pattern.test(m[2]))
    return hit ? Number(hit[1].replace(/,/g, '')) : 0
  }
  const sum = (patterns) => patterns.reduce((total, pattern) => total + inclusive(pattern), 0)
  const total = /^summary:\s*(\d+)/m.exec(fs.readFileSync(dump, 'utf8'))
  if (total === null) throw new Error(`${dump}: no summary line`)
  return { total: Number(total[1]), compiler: sum(BURSTS.compiler), gc: sum(BURSTS.gc) }
}

/**
 * One server under callgrind: warm up (V8 optimises the hot code), zero the counters, send as
 * many requests again and dump. `--single-threaded` keeps V8's compiler and garbage collector
 * threads on the main thread, so their work is in the count (and can be told apart).
 * Per request: everything, the compiler's and GC's shares, and the rest (`steady`).
 */
async function count(framework, variant, dir) {
  const requests = REQUESTS[framework]
  const { child, match } = await startChild(
    'valgrind',
    [
      '--tool=callgrind',
      `--callgrind-out-file=${path.join(dir, `${framework}-${variant}-%p`)}`,
      process.execPath,
      '--single-threaded',
      '--expose-gc',
      SERVER,
      framework,
      variant,
    ],
    /ready (\d+)/,
    { quiet: true },
  )
  running.add(child)
  try {
    const port = Number(match[1])
    await load(port, requests)
    control('-z', child.pid)
    await load(port, requests)
    control('-d', child.pid)
    const { total, compiler, gc } = breakdown(
      path.join(dir, `${framework}-${variant}-${child.pid}.1`),
    )
    return {
      total: total / requests,
      compiler: compiler / requests,
      gc: gc / requests,
      steady: (total - compiler - gc) / requests,
    }
  } finally {
    // SIGKILL: the counts are read; callgrind's final dump on exit would only cost time.
    await stopChild(child, 'SIGKILL')
    running.delete(child)
  }
}

async function main() {
  if (!hasValgrind()) {
    console.error('bench:instructions needs valgrind (Debian: apt-get install valgrind)')
    // In `npm run bench` (all parts), the others still run; its last result file stays.
    process.exit(process.env.BENCH_RUN_ALL === '1' ? 0 : 1)
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-instructions-'))
  // Every (framework, variant) ROUNDS times, rounds one after another, so a slow hour of the
  // machine cannot fall on one variant only.
  const jobs = []
  for (let round = 0; round < ROUNDS; round++) {
    for (const framework of FRAMEWORKS) {
      for (const variant of VARIANTS) jobs.push({ framework, variant })
    }
  }
  const counts = new Map()
  let next = 0
  async function worker() {
    while (next < jobs.length) {
      const { framework, variant } = jobs[next++]
      const perRequest = await count(framework, variant, dir)
      const key = `${framework} ${variant}`
      counts.set(key, [...(counts.get(key) ?? []), perRequest])
      const { steady, total, compiler, gc } = perRequest
      console.log(
        `${key}: ${kilo(steady)} instructions per request outside V8's compiler and GC ` +
          `(all: ${kilo(total)}, compiler ${kilo(compiler)}, GC ${kilo(gc)})`,
      )
    }
  }
  try {
    await Promise.all(Array.from({ length: PARALLEL }, worker))
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
  if (ONLY) return

  const frameworks = {}
  for (const framework of FRAMEWORKS) {
    const runs = (variant, field = 'steady') =>
      counts.get(`${framework} ${variant}`).map((run) => run[field])
    const base = median(runs('none'))
    const rows = VARIANTS.map((variant) => ({
      variant,
      label: variant.startsWith('peer')
        ? `${PEERS[framework]}${variant.endsWith('-reject') ? ', rejecting (429)' : ''}`
        : LABELS[variant],
      instructions: median(runs(variant)),
      runs: runs(variant),
      ratio: median(runs(variant)) / base,
      total: median(runs(variant, 'total')),
      totalRuns: runs(variant, 'total'),
      compiler: median(runs(variant, 'compiler')),
      gc: median(runs(variant, 'gc')),
    }))
    frameworks[framework] = { peer: PEERS[framework], measured: today(), rows }
  }
  const { all, requests } = SUBSET
    ? withEarlier(frameworks)
    : { all: frameworks, requests: REQUESTS }
  const sections = Object.entries(all).map(([framework, f]) => section(framework, f))
  const valgrind = execFileSync('valgrind', ['--version'], { encoding: 'utf8' }).trim()
  const text = writeResult(
    'instructions',
    'Instructions per HTTP request',
    `${valgrind} (callgrind) counts the instructions of each server process (node ` +
      `--single-threaded, so V8's compiler and garbage collector are in the count): requests ` +
      `from autocannon (50 connections) to warm up, then the counters are zeroed and as many ` +
      `again are counted (${Object.keys(all)
        .map((f) => `${f} ${fmtCount(requests[f])}`)
        .join(', ')}). ` +
      `${ROUNDS} run${ROUNDS === 1 ? '' : 's'} per server, each in a new process; the median ` +
      `counts. Variants as in the HTTP benchmark (http.md): admitting, with a limit no run ` +
      `reaches; the floor is a middleware that only sets the three X-RateLimit headers, the 429 ` +
      `floor one that answers every request with the 429 Sluice sends (its five headers and ` +
      `JSON body). The ` +
      `count depends far less than requests per second on the machine's other load, but V8's ` +
      `optimising compiler and its garbage collections fall unevenly into a window (the ` +
      `compiler alone added 5-6.5k instructions per request to some Fastify runs and nothing ` +
      `to others), so the figures compared leave out what callgrind counts inside them ` +
      `(Runtime_CompileOptimized, Runtime_CompileLazy, Heap::CollectGarbage and ` +
      `IncrementalMarking::Step, inclusive); "all" is everything, and the compiler and GC ` +
      `columns are medians per request. What remains still differs a little from one process ` +
      `to the next by what V8 did while it started (see docs/benchmarks.md): hence the runs ` +
      `columns.\n\n${sections.join('\n\n')}`,
    [
      '@sluice/core',
      'express',
      'fastify',
      'koa',
      '@nestjs/core',
      ...new Set(Object.values(PEERS).map(peerPackage)),
    ],
    { requests, rounds: ROUNDS, frameworks: all },
  )
  console.log(`\n${text}`)
}

/** One framework's section of the result page, from its rows. */
function section(framework, { peer, measured, rows }) {
  const row = (variant) => rows.find((r) => r.variant === variant)
  const added = (variant) => `${((row(variant).ratio - 1) * 100).toFixed(1)}%`
  return (
    `## ${framework[0].toUpperCase()}${framework.slice(1)}\n\n` +
    (measured ? `Counted ${measured}. ` : '') +
    `Sluice's memory store adds ${added('sluice-memory')} to the instructions the no-limiter ` +
    `server runs per request outside V8's compiler and garbage collector, ` +
    `${peer} ${added('peer-memory')}; the three headers alone ` +
    `${added('floor')}. Rejecting every request with 429, Sluice runs ` +
    `${(row('sluice-memory-reject').instructions / row('sluice-memory').instructions).toFixed(2)}x ` +
    `the instructions of its admitting path, ${peer} ` +
    `${(row('peer-memory-reject').instructions / row('peer-memory').instructions).toFixed(2)}x. ` +
    `Beyond what its response costs at least (the floor rows: the same headers and body from ` +
    `a bare middleware), Sluice's own work is ${kilo(row('sluice-memory').instructions - row('floor').instructions)} ` +
    `instructions per admitted request and ${kilo(row('sluice-memory-reject').instructions - row('floor-reject').instructions)} ` +
    `per 429.\n\n` +
    table(
      [
        'variant',
        'outside compiler and GC (median)',
        'vs no limiter',
        'runs',
        'all (median)',
        'all, runs',
        'compiler',
        'GC',
      ],
      rows.map((r) => [
        r.label,
        kilo(r.instructions),
        r.ratio.toFixed(3),
        r.runs.map(kilo).join(', '),
        kilo(r.total),
        r.totalRuns.map(kilo).join(', '),
        kilo(r.compiler),
        kilo(r.gc),
      ]),
    )
  )
}

/** The frameworks just counted, with the others' figures (and request counts) from the last result file. */
function withEarlier(counted) {
  const earlier = JSON.parse(fs.readFileSync(path.join(resultsDir(), 'instructions.json'), 'utf8'))
  const merged = { ...earlier.data.frameworks, ...counted }
  for (const f of Object.values(earlier.data.frameworks)) f.measured ??= earlier.machine.date
  const all = Object.fromEntries(
    ALL_FRAMEWORKS.filter((f) => merged[f] !== undefined).map((f) => [f, merged[f]]),
  )
  return { all, requests: { ...earlier.data.requests, ...REQUESTS } }
}

function today() {
  return new Date().toISOString().slice(0, 10)
}

function peerPackage(label) {
  return label.split(' ')[0]
}

function kilo(n) {
  return `${(n / 1000).toFixed(1)}k`
}

function fmtCount(n) {
  return n.toLocaleString('en-US')
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
