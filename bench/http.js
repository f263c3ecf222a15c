'use strict'
// HTTP benchmark: Express, Fastify and Koa hello-world apps with no limiter, Sluice and the
// framework's popular limiter (memory and Redis stores), admitting and rejecting. Every server
// runs in its own process and autocannon in another; variants are interleaved within a round
// and each is compared with the no-limiter baseline of the same round.
// Run: node bench/http.js  (after npm run build; needs redis-server on PATH)
// BENCH_HTTP_SECONDS (default 2) per run, BENCH_HTTP_TRIES (3 timed runs per server, the best
// counts), BENCH_HTTP_ROUNDS (default 3), BENCH_HTTP_CONNECTIONS (50);
// for trial runs, BENCH_HTTP_FRAMEWORKS and BENCH_HTTP_VARIANTS (comma-separated) pick a subset
// ('none' is always run: every figure is a ratio to it), with BENCH_RESULTS_DIR so the committed
// results stay untouched.
const { execFile } = require('node:child_process')
const path = require('node:path')
const {
  table,
  fmt,
  median,
  writeResult,
  startRedisServer,
  startChild,
  stopChild,
  cpuMicros,
  envCount,
  HTTP_FRAMEWORKS,
  HTTP_VARIANTS,
} = require('./lib')

const SECONDS = envCount('BENCH_HTTP_SECONDS', 2)
const TRIES = envCount('BENCH_HTTP_TRIES', 3)
const ROUNDS = envCount('BENCH_HTTP_ROUNDS', 3)
const CONNECTIONS = envCount('BENCH_HTTP_CONNECTIONS', 50)
const ALL_FRAMEWORKS = HTTP_FRAMEWORKS
const ALL_VARIANTS = HTTP_VARIANTS
/** The subset an environment variable names (all when unset), in the canonical order. */
function pick(all, env, always) {
  const names = process.env[env]
    ?.split(',')
    .map((name) => name.trim())
    .filter(Boolean)
  if (names === undefined || names.length === 0) return all
  const unknown = names.filter((name) => !all.includes(name))
  if (unknown.length > 0) throw new Error(`${env}: unknown ${unknown.join(', ')}`)
  return all.filter((name) => name === always || names.includes(name))
}
const FRAMEWORKS = pick(ALL_FRAMEWORKS, 'BENCH_HTTP_FRAMEWORKS')
const VARIANTS = pick(ALL_VARIANTS, 'BENCH_HTTP_VARIANTS', 'none')
const PEERS = {
  express: { memory: 'express-rate-limit', redis: 'express-rate-limit + rate-limit-redis' },
  fastify: { memory: '@fastify/rate-limit', redis: '@fastify/rate-limit (ioredis)' },
  koa: { memory: 'koa-ratelimit (memory driver)', redis: 'koa-ratelimit (ioredis)' },
}
const AUTOCANNON = require.resolve('autocannon/autocannon.js')

function autocannon(port, seconds) {
  return new Promise((resolve, reject) => {
    const args = [
      AUTOCANNON,
      '-j',
      '-c',
      String(CONNECTIONS),
      '-d',
      String(seconds),
      `http://127.0.0.1:${port}/`,
    ]
    execFile(process.execPath, args, { maxBuffer: 1 << 24 }, (error, stdout) => {
      if (error) return reject(error)
      resolve(JSON.parse(stdout.trim().split('\n').pop()))
    })
  })
}

async function flush(redisPort) {
  const Redis = require('ioredis')
  const client = new Redis({ port: redisPort, host: '127.0.0.1', lazyConnect: true })
  await client.connect()
  await client.flushall()
  client.disconnect()
}

/** CPU µs per request of a process over a run (undefined where /proc is not available). */
function perRequest(pid, before, requests) {
  const after = cpuMicros(pid)
  return before === undefined || after === undefined ? undefined : (after - before) / requests
}

async function measure(framework, variant, redis) {
  const redisPort = redis.port
  if (variant.includes('redis')) await flush(redisPort)
  const server = path.join(__dirname, 'http', 'server.js')
  const { child, match } = await startChild(
    process.execPath,
    ['--expose-gc', server, framework, variant, String(redisPort)],
    /ready (\d+)/,
  )
  try {
    const port = Number(match[1])
    await autocannon(port, 1) // warm-up: JIT, connection pools, the first (admitted) request
    const usesRedis = variant.includes('redis')
    // The best of TRIES timed runs: see "slow kernel runs" in docs/benchmarks.md.
    let best
    for (let attempt = 0; attempt < TRIES; attempt++) {
      const serverBefore = cpuMicros(child.pid)
      const redisBefore = usesRedis ? cpuMicros(redis.pid()) : undefined
      const result = await autocannon(port, SECONDS)
      const requests = Math.max(1, result.requests.total)
      const run = {
        rps: result.requests.average,
        cpu: perRequest(child.pid, serverBefore, requests),
        redisCpu: usesRedis ? perRequest(redis.pid(), redisBefore, requests) : undefined,
        p99: result.latency.p99,
        rejected: result.non2xx / requests,
        errors: result.errors,
      }
      if (best === undefined || run.rps > best.rps) best = run
    }
    return best
  } finally {
    await stopChild(child)
  }
}

/** The median of a per-run figure, or undefined when the runs did not measure it. */
function medianOf(list, key) {
  const values = list.map((r) => r[key]).filter((v) => v !== undefined)
  return values.length === 0 ? undefined : median(values)
}

/** CPU per request of the server process, plus redis-server's for the Redis variants. */
function cpuCell(list) {
  const cpu = medianOf(list, 'cpu')
  if (cpu === undefined) return 'n/a'
  const redisCpu = medianOf(list, 'redisCpu')
  return redisCpu === undefined ? cpu.toFixed(1) : `${cpu.toFixed(1)} + ${redisCpu.toFixed(1)}`
}

/** What each limiter adds to the no-limiter server's CPU per request (throughput's noise aside). */
function cpuHeadline(byVariant) {
  const cpu = (v) => medianOf(byVariant[v], 'cpu')
  const total = (v) => cpu(v) + (medianOf(byVariant[v], 'redisCpu') ?? 0)
  if (cpu('none') === undefined) return ''
  const added = (v) => `${(((cpu(v) - cpu('none')) / cpu('none')) * 100).toFixed(0)}%`
  return (
    `Server CPU per request: ${cpu('none').toFixed(1)} µs with no limiter, ` +
    `${added('floor')} more with a middleware that only sets the three headers, ` +
    `${added('sluice-memory')} more with Sluice memory and ${added('peer-memory')} more with the peer's; ` +
    `with Redis, ${total('sluice-redis').toFixed(1)} µs (server and redis-server) against the peer's ${total('peer-redis').toFixed(1)} µs.`
  )
}

function label(framework, variant) {
  const [who, store, rejecting] = variant.split('-')
  if (who === 'none') return 'no limiter'
  if (who === 'floor') return 'three headers only (floor)'
  const name = who === 'sluice' ? `Sluice ${store}` : PEERS[framework][store]
  return rejecting ? `${name}, rejecting` : name
}

async function main() {
  const redis = await startRedisServer()
  const runs = {} // framework -> variant -> [{ rps, ratio, p99, rejected }]
  const started = Date.now()
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      for (const framework of FRAMEWORKS) {
        runs[framework] ??= {}
        const results = {}
        // Every other round runs the variants in reverse order, so a machine slowing down or
        // speeding up over a round does not always favour the same ones.
        const order = round % 2 === 1 ? VARIANTS : [...VARIANTS].reverse()
        for (const variant of order) {
          const r = await measure(framework, variant, redis)
          results[variant] = r
          console.log(
            `round ${round} ${framework} ${variant}: ${fmt(r.rps)} req/s, p99 ${r.p99} ms, ${(100 * r.rejected).toFixed(0)}% non-2xx`,
          )
        }
        for (const variant of VARIANTS) {
          const r = results[variant]
          ;(runs[framework][variant] ??= []).push({ ...r, ratio: r.rps / results.none.rps })
        }
      }
    }
  } finally {
    await redis.stop()
  }

  const sections = []
  const data = {
    seconds: SECONDS,
    tries: TRIES,
    rounds: ROUNDS,
    connections: CONNECTIONS,
    // framework -> { peer, rows: [{ variant, label, rps, ratio, p99, rejected }], versusPeer }
    frameworks: {},
  }
  for (const framework of FRAMEWORKS) {
    data.frameworks[framework] = {
      peer: PEERS[framework],
      rows: VARIANTS.map((variant) => {
        const list = runs[framework][variant]
        return {
          variant,
          label: label(framework, variant),
          rps: median(list.map((r) => r.rps)),
          ratio: median(list.map((r) => r.ratio)),
          p99: median(list.map((r) => r.p99)),
          rejected: median(list.map((r) => r.rejected)),
          cpu: medianOf(list, 'cpu'),
          redisCpu: medianOf(list, 'redisCpu'),
        }
      }),
    }
    const rows = VARIANTS.map((variant) => {
      const list = runs[framework][variant]
      const rps = median(list.map((r) => r.rps))
      const ratio = median(list.map((r) => r.ratio))
      return [
        label(framework, variant),
        fmt(rps),
        variant === 'none' ? '1.00' : ratio.toFixed(2),
        variant === 'none' ? '' : `${((1 - ratio) * 100).toFixed(0)}%`,
        String(median(list.map((r) => r.p99))),
        `${(100 * median(list.map((r) => r.rejected))).toFixed(0)}%`,
        cpuCell(list),
      ]
    })
    // Sluice against the peer: the median of each round's ratio, as for "vs no limiter".
    const by = (v) => runs[framework][v].map((r) => r.rps)
    const versus = (sluice, peer) => median(by(sluice).map((rps, round) => rps / by(peer)[round]))
    const cost = (v) =>
      `${((1 - median(runs[framework][v].map((r) => r.ratio))) * 100).toFixed(0)}%`
    // A trial run of a subset of variants has no headline.
    const complete = ALL_VARIANTS.every((v) => VARIANTS.includes(v))
    const versusPeer = complete
      ? {
          redis: versus('sluice-redis', 'peer-redis'),
          redisReject: versus('sluice-redis-reject', 'peer-redis-reject'),
        }
      : undefined
    if (versusPeer !== undefined) data.frameworks[framework].versusPeer = versusPeer
    const headline = versusPeer
      ? `Sluice memory costs ${cost('sluice-memory')} of the baseline ` +
        `(${PEERS[framework].memory}: ${cost('peer-memory')}; a middleware that only sets the same ` +
        `three headers: ${cost('floor')}); ` +
        `with Redis Sluice serves ${versusPeer.redis.toFixed(2)}x the peer's requests per second ` +
        `(rejecting: ${versusPeer.redisReject.toFixed(2)}x; medians of each round's ratio). ` +
        cpuHeadline(runs[framework])
      : `Trial run of ${VARIANTS.join(', ')}.`
    sections.push(
      `## ${framework[0].toUpperCase()}${framework.slice(1)}\n\n${headline}\n\n` +
        table(
          [
            'variant',
            'req/s (median)',
            'vs no limiter',
            'cost',
            'p99 ms',
            'non-2xx',
            'CPU µs/request (server + Redis)',
          ],
          rows,
        ),
    )
  }
  const minutes = ((Date.now() - started) / 60000).toFixed(1)
  const body = `autocannon (${CONNECTIONS} connections) in its own process against a server process per variant: a 1 s warm-up, then ${TRIES} timed runs of ${SECONDS} s, of which the one with the most requests per second counts (on loopback, a whole run at random costs the kernel up to three times its usual time per request, whatever the server; see docs/benchmarks.md); ${ROUNDS} rounds, the ${VARIANTS.length} variants of a framework interleaved within each round (in reverse order every other round); medians over the rounds, and "vs no limiter" is the median of each round's ratio to the no-limiter run of the same round, as is each headline's Sluice-to-peer ratio. The floor row is no limiter, only a middleware (for Fastify, an onRequest hook) that sets the three X-RateLimit headers Sluice sends by default: what those headers alone cost, before any limiting. Admitting variants use a limit no run reaches; rejecting variants a limit of 1 per hour, so every request after the first is answered 429. Sluice uses its defaults (sliding-window; @sluice/redis keeps a local cache of keys known to be over their limit, so its rejecting path mostly skips the round trip). Redis: a private redis-server on localhost, flushed before each run. CPU per request is the CPU time the server process (and, for the Redis variants, redis-server) used during the timed run, from /proc, divided by the requests served: unlike requests per second, it does not depend on how the shared cores were divided between the processes at the time. The load generator, the server and redis-server share the machine's cores, so absolute figures are lower than on a dedicated load generator; compare within a table. Total time ${minutes} min.

${sections.join('\n\n')}`
  console.log(
    writeResult(
      'http',
      'HTTP benchmark',
      body,
      [
        '@sluice/core',
        'express',
        'fastify',
        'koa',
        'express-rate-limit',
        'rate-limit-redis',
        '@fastify/rate-limit',
        'koa-ratelimit',
        'ioredis',
        'autocannon',
      ],
      data,
    ),
  )
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
