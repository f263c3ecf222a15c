'use strict'
// A hung Redis under sustained load: heap growth and decision latency while redis-server is
// stopped (SIGSTOP) for 10 s, then resumed, with the breaker on (default) and off (only the
// maxInFlight bound). Starts its own redis-server. Run: node --expose-gc bench/hang.js
const { setTimeout: delay } = require('node:timers/promises')
const { Redis } = require('ioredis')
const { createLimiter, storeHealth } = require('@sluice/core')
const { RedisStore } = require('@sluice/redis')
const { startRedisServer, heapUsed, table, writeResult, envCount } = require('./lib')

const RATE = envCount('BENCH_HANG_RATE', 2000) // decisions per second
const STEADY_MS = 3000
const HANG_MS = envCount('BENCH_HANG_MS', 10_000)
const TIMEOUT_MS = 1000

function percentile(sorted, p) {
  return sorted.length === 0
    ? 0
    : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]
}

async function run(label, extra) {
  const redis = await startRedisServer()
  const client = new Redis({ port: redis.port, maxRetriesPerRequest: 1 })
  client.on('error', () => undefined)
  const store = new RedisStore({ client, blockCache: false })
  const lines = []
  const limiter = createLimiter({
    store,
    limit: 1_000_000,
    window: '1h',
    timeoutMs: TIMEOUT_MS,
    onStoreError: 'deny',
    logger: { warn: (line) => lines.push(line) },
    ...extra,
  })
  let phase = 'steady'
  const latencies = { steady: [], hang: [], after: [] }
  let maxInFlight = 0
  let keyIndex = 0
  const perTick = RATE / 100
  const timer = setInterval(() => {
    for (let i = 0; i < perTick; i++) {
      const started = performance.now()
      const bucket = latencies[phase]
      limiter.consume(`user:${keyIndex++ % 10_000}`).then(() => {
        bucket.push(performance.now() - started)
      })
    }
    maxInFlight = Math.max(maxInFlight, storeHealth(store)?.inFlight ?? 0)
  }, 10)

  await delay(STEADY_MS)
  const steadyHeap = heapUsed()
  phase = 'hang'
  redis.pause()
  let peakHeap = steadyHeap
  for (let waited = 0; waited < HANG_MS; waited += 500) {
    await delay(500)
    peakHeap = Math.max(peakHeap, heapUsed())
  }
  phase = 'after'
  redis.resume()
  await delay(3000)
  clearInterval(timer)
  await delay(TIMEOUT_MS + 200)
  const hang = latencies.hang.sort((a, b) => a - b)
  client.disconnect()
  await redis.stop()
  return {
    label,
    steadyHeapMB: steadyHeap / 1e6,
    growthMB: (peakHeap - steadyHeap) / 1e6,
    hangP50: percentile(hang, 0.5),
    hangP99: percentile(hang, 0.99),
    hangMax: hang[hang.length - 1] ?? 0,
    decisionsInHang: hang.length,
    maxInFlight,
    logLines: lines.length,
  }
}

async function main() {
  const results = [
    await run('breaker on (default)', {}),
    await run('breaker off, maxInFlight 5000', { breaker: false }),
  ]
  const rows = results.map((r) => [
    r.label,
    r.steadyHeapMB.toFixed(1),
    r.growthMB.toFixed(1),
    r.hangP50.toFixed(1),
    r.hangP99.toFixed(1),
    r.hangMax.toFixed(1),
    r.decisionsInHang,
    r.maxInFlight,
    r.logLines,
  ])
  const body = [
    `${RATE} decisions/s over 10,000 keys; redis-server stopped (SIGSTOP) for ${HANG_MS / 1000} s, onStoreError 'deny', timeoutMs ${TIMEOUT_MS}. Heap after a forced GC, sampled every 500 ms; latency of decisions made during the hang.`,
    '',
    table(
      [
        'configuration',
        'steady heap MB',
        'growth in hang MB',
        'p50 ms',
        'p99 ms',
        'max ms',
        'decisions',
        'max calls out',
        'log lines',
      ],
      rows,
    ),
  ].join('\n')
  console.log(body)
  writeResult('hang', 'A hung Redis under load', body, ['ioredis'], results)
  process.exit(0)
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
