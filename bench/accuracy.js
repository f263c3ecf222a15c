'use strict'
// Accuracy oracle: replays synthetic traces through every algorithm (createLimiter on a memory
// store with an injected clock) and checks each decision against an exact sliding log of the
// same limit and window, written here independently of Sluice's own sliding-log.
// Run: node bench/accuracy.js  (after npm run build). Writes docs/bench/accuracy.md.
const { createLimiter, ALGORITHMS } = require('@sluice/core')
const { seededRandom } = require('@sluice/cli')
const { table, writeResult } = require('./lib')

const LIMIT = 100
const WINDOW_MS = 60_000 // a per-minute limit, as in Cloudflare's measurement
const SEED = 20240601

/** Arrivals of a Poisson process at `perMs` over [from, to), as whole ms. */
function poisson(random, from, to, perMs, out) {
  for (let t = from - Math.log(1 - random()) / perMs; t < to; t -= Math.log(1 - random()) / perMs)
    out.push(Math.floor(t))
}

// Each trace: [{ at, key }] sorted by time. Rates are in units of the limit's rate.
const rate = (x) => (x * LIMIT) / WINDOW_MS
const traces = {
  steady(random) {
    // 40 clients, each at a constant rate between 0.5x and 1.5x the limit, for 30 windows.
    const out = []
    for (let c = 0; c < 40; c++) {
      const times = []
      poisson(random, 0, 30 * WINDOW_MS, rate(0.5 + random()), times)
      for (const at of times) out.push({ at, key: `steady:${c}` })
    }
    return out
  },
  bursty(random) {
    // 40 clients alternating quiet spells (0.2x) and bursts (4x), each lasting 0.1 to 1.5 windows.
    const out = []
    for (let c = 0; c < 40; c++) {
      const times = []
      for (let t = 0, on = random() < 0.5; t < 30 * WINDOW_MS; on = !on) {
        const length = Math.floor((0.1 + 1.4 * random()) * WINDOW_MS)
        poisson(random, t, t + length, rate(on ? 4 : 0.2), times)
        t += length
      }
      for (const at of times) out.push({ at, key: `bursty:${c}` })
    }
    return out
  },
  'many clients'(random) {
    // 5000 clients with Zipf-like rates: a few far over the limit, most well under it.
    const out = []
    for (let c = 1; c <= 5000; c++) {
      const times = []
      poisson(random, 0, 10 * WINDOW_MS, rate(3 / c ** 0.7), times)
      for (const at of times) out.push({ at, key: `many:${c}` })
    }
    return out
  },
  'edge of window'(random) {
    // 40 clients sending `limit` requests in the last 2% of a window and `limit` in the first
    // 2% of the next, every other boundary, over a trickle at 0.3x: the fixed-window worst case.
    const out = []
    const span = WINDOW_MS / 50
    for (let c = 0; c < 40; c++) {
      const times = []
      poisson(random, 0, 30 * WINDOW_MS, rate(0.3), times)
      for (
        let boundary = WINDOW_MS * (1 + (c % 2));
        boundary < 30 * WINDOW_MS;
        boundary += 2 * WINDOW_MS
      ) {
        for (let i = 0; i < LIMIT; i++) times.push(Math.floor(boundary - span + random() * span))
        for (let i = 0; i < LIMIT; i++) times.push(Math.floor(boundary + random() * span))
      }
      for (const at of times) out.push({ at, key: `edge:${c}` })
    }
    return out
  },
}

/** Timestamps of admitted requests per key, with the count inside the trailing window. */
class Log {
  constructor() {
    this.times = []
    this.head = 0
  }
  /** Admitted units in (now - window, now]. */
  count(now) {
    while (this.head < this.times.length && this.times[this.head] <= now - WINDOW_MS) this.head++
    return this.times.length - this.head
  }
}

/** Most admissions inside any window (t - window, t] over sorted `times`. */
function worstWindow(times) {
  let worst = 0
  for (let i = 0, j = 0; j < times.length; j++) {
    while (times[i] <= times[j] - WINDOW_MS) i++
    worst = Math.max(worst, j - i + 1)
  }
  return worst
}

/** The exact limiter replayed on its own: which requests it admits. */
function exactReplay(trace) {
  const logs = new Map()
  return trace.map(({ at, key }) => {
    let log = logs.get(key)
    if (!log) logs.set(key, (log = new Log()))
    const admit = log.count(at) + 1 <= LIMIT
    if (admit) log.times.push(at)
    return admit
  })
}

async function measure(algorithm, trace, exact) {
  const clock = { now: 0 }
  const limiter = createLimiter({
    algorithm,
    limit: LIMIT,
    window: WINDOW_MS,
    clock: () => clock.now,
  })
  // The algorithm's own admitted history per key: the exact rule is asked about the same
  // history the algorithm saw, so one early difference does not count again on every later
  // request (Cloudflare's "wrongly allowed or rate limited").
  const logs = new Map()
  const departures = new Map()
  let wronglyAdmitted = 0
  let wronglyRejected = 0
  let differs = 0
  let admitted = 0
  let exactAdmitted = 0
  let rateError = 0
  for (let i = 0; i < trace.length; i++) {
    const { at, key } = trace[i]
    clock.now = at
    const d = await limiter.consume(key)
    let log = logs.get(key)
    if (!log) {
      logs.set(key, (log = new Log()))
      departures.set(key, [])
    }
    const inWindow = log.count(at)
    const exactAdmits = inWindow + 1 <= LIMIT
    if (d.allowed && !exactAdmits) wronglyAdmitted++
    if (!d.allowed && exactAdmits) wronglyRejected++
    if (d.allowed !== exact[i]) differs++
    if (exact[i]) exactAdmitted++
    // What the algorithm believes is used before this request, against the true count.
    const used = d.policy.burst - d.remaining - (d.allowed ? 1 : 0)
    rateError += Math.abs(used - inWindow) / LIMIT
    if (d.allowed) {
      admitted++
      log.times.push(at)
      departures.get(key).push(at + d.delayMs)
    }
  }
  let worstAdmitted = 0
  let worstPassed = 0
  for (const [key, log] of logs) {
    worstAdmitted = Math.max(worstAdmitted, worstWindow(log.times))
    worstPassed = Math.max(worstPassed, worstWindow(departures.get(key).sort((a, b) => a - b)))
  }
  return {
    requests: trace.length,
    wronglyAdmitted,
    wronglyRejected,
    differs,
    admitted,
    exactAdmitted,
    rateError,
    worstAdmitted,
    worstPassed,
  }
}

const pct = (part, whole) => `${((100 * part) / whole).toFixed(3)}%`

/** One row of docs/bench/accuracy.json: shares in percent, windows as multiples of the limit. */
function record(r) {
  const share = (part) => (100 * part) / r.requests
  return {
    requests: r.requests,
    wronglyAdmittedPct: share(r.wronglyAdmitted),
    wronglyRejectedPct: share(r.wronglyRejected),
    misclassifiedPct: share(r.wronglyAdmitted + r.wronglyRejected),
    rateErrorPct: share(r.rateError),
    differsPct: share(r.differs),
    admittedVsExact: r.admitted / r.exactAdmitted,
    worstWindowAdmitted: r.worstAdmitted / LIMIT,
    worstWindowPassed: r.worstPassed / LIMIT,
  }
}

function row(name, r) {
  return [
    name,
    r.requests.toLocaleString('en'),
    pct(r.wronglyAdmitted, r.requests),
    pct(r.wronglyRejected, r.requests),
    pct(r.wronglyAdmitted + r.wronglyRejected, r.requests),
    `${((100 * r.rateError) / r.requests).toFixed(1)}%`,
    pct(r.differs, r.requests),
    `${(r.admitted / r.exactAdmitted).toFixed(3)}`,
    `${(r.worstAdmitted / LIMIT).toFixed(2)}x`,
    `${(r.worstPassed / LIMIT).toFixed(2)}x`,
  ]
}

const HEADERS = [
  'algorithm',
  'requests',
  'wrongly admitted',
  'wrongly rejected',
  'misclassified',
  'mean rate error',
  'differs from exact replay',
  'admitted / exact',
  'worst window (admitted)',
  'worst window (passed on)',
]

async function main() {
  const random = seededRandom(SEED)
  const built = Object.entries(traces).map(([name, make]) => {
    const trace = make(random).sort((a, b) => a.at - b.at)
    return { name, trace, exact: exactReplay(trace) }
  })
  const totals = []
  const detail = []
  const data = { limit: LIMIT, windowMs: WINDOW_MS, seed: SEED, totals: [], traces: [] }
  for (const algorithm of ALGORITHMS) {
    const sum = {}
    for (const { name, trace, exact } of built) {
      const r = await measure(algorithm, trace, exact)
      detail.push(row(`${algorithm} / ${name}`, r))
      data.traces.push({ algorithm, trace: name, ...record(r) })
      for (const [k, v] of Object.entries(r)) {
        sum[k] = k.startsWith('worst') ? Math.max(sum[k] ?? 0, v) : (sum[k] ?? 0) + v
      }
    }
    totals.push(row(algorithm, sum))
    data.totals.push({ algorithm, ...record(sum) })
  }
  const sizes = built.map((b) => `${b.name} ${b.trace.length.toLocaleString('en')}`).join(', ')
  const body = `Limit ${LIMIT} per ${WINDOW_MS / 1000} s for every client; the meters (token-bucket, leaky-bucket, gcra) with the default burst = limit. Traces (seeded, the same on every run): ${sizes} requests. Reference: an exact sliding log of the same limit and window, written in the benchmark independently of Sluice.

- **wrongly admitted / wrongly rejected / misclassified**: share of all requests where the algorithm's decision differs from what the exact limit decides on the same history (the algorithm's own admitted requests so far). These are the terms of Cloudflare's measurement of its sliding-window counter: 0.003% of 400 million requests misclassified.
- **mean rate error**: mean over requests of |rate the algorithm believes used - true count in the trailing window| / limit, where the belief is capacity - remaining (for the meters, their backlog). Cloudflare reported a 6% average difference between real and approximate rate.
- **differs from exact replay**: share of requests decided differently from an exact limiter replayed on its own (differences compound once histories part); **admitted / exact**: requests admitted relative to that exact replay.
- **worst window**: most requests admitted in any window of ${WINDOW_MS / 1000} s for one client, over the limit (1.00x = never over). *Passed on* counts leaky-bucket requests when their delay ends.

These traces are adversarial: every client in steady, bursty and edge is near or above its limit all the time, where decisions can differ; Cloudflare's traffic was mostly clients far under their limits, which no algorithm misjudges. Compare algorithms here with each other, not with Cloudflare's absolute figure.

## All traces

${table(HEADERS, totals)}

## Per trace

${table(HEADERS, detail)}`
  console.log(
    writeResult(
      'accuracy',
      'Accuracy against an exact sliding window',
      body,
      ['@sluice/core'],
      data,
    ),
  )
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
