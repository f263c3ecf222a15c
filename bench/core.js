'use strict'
// Decisions per second (hot key, one million keys) and heap bytes per key, for every
// algorithm on the memory store, beside rate-limiter-flexible's RateLimiterMemory in the
// same run. Run: node --expose-gc bench/core.js  (after npm run build)
//
// Each variant is measured in a fresh child process (one at a time, rounds interleaved), so
// that no variant runs on code the JIT shaped for another, or on a heap another left behind.
const { spawnSync } = require('node:child_process')
const { heapUsed, median, table, fmt, writeResult, envCount } = require('./lib')

const HOT_OPS = envCount('BENCH_HOT_OPS', 10_000_000)
const KEYS = envCount('BENCH_KEYS', 1_000_000)
const ROUNDS = envCount('BENCH_CORE_ROUNDS', 3)
const IN_FLIGHT = 100
const PAIRED_SLICES = 10
const PAIRED_SLICE_OPS = 2_000_000
const BIG = 100_000_000 // never limited: both libraries take the admit path
const PEER = 'rate-limiter-flexible (RateLimiterMemory)'

/** name -> () => consume(key): a fresh limiter per call. */
function variants() {
  const { createLimiter, MemoryStore, ALGORITHMS } = require('@sluice/core')
  const { RateLimiterMemory } = require('rate-limiter-flexible')
  const sluice = (algorithm, limit) => {
    const limiter = createLimiter({
      algorithm,
      limit,
      window: '1h',
      store: new MemoryStore({ maxKeys: KEYS }),
    })
    return (key) => limiter.consume(key)
  }
  const all = new Map()
  all.set(PEER, () => {
    // RateLimiterMemory rejects its promise when limited; at this limit it never is.
    const rl = new RateLimiterMemory({ points: BIG, duration: 3600 })
    return (key) => rl.consume(key)
  })
  for (const algorithm of ALGORITHMS) {
    // sliding-log keeps a timestamp per admitted request, so it runs at limit 10: its hot key
    // is over its limit after 10 decisions, as a hot key of an exact log always is.
    if (algorithm === 'sliding-log') continue
    all.set(`sluice ${algorithm}`, () => sluice(algorithm, BIG))
  }
  all.set('sluice sliding-log (limit 10)', () => sluice('sliding-log', 10))
  return all
}

/**
 * Decisions per second of `task(i)`, `total` times: `inFlight` calls back to back, as that many
 * concurrent requests would make them, then an await of the last one. Both libraries decide
 * inside the call and settle their promises in call order, so every decision is made and
 * settled by then; awaiting each one as well would add the same cost to both and measure
 * the harness more than the limiters.
 */
async function decisionsPerSecond(task, total) {
  const start = process.hrtime.bigint()
  let last
  for (let done = 0; done < total; done += IN_FLIGHT) {
    for (let i = 0; i < IN_FLIGHT; i++) last = task(done + i)
    await last
  }
  return total / (Number(process.hrtime.bigint() - start) / 1e9)
}

/**
 * Loops of decisionsPerSecond's shape over `consume(key)`, first on 1,000 warm-up keys, then on
 * the hot key, as code of their own: V8 keeps type feedback per function, so two limiters timed
 * in one process through one loop would each run on a loop shaped for both.
 */
function ownLoops() {
  const loop = (key) =>
    `async (consume, total) => {
      const start = process.hrtime.bigint()
      let last
      for (let done = 0; done < total; done += ${IN_FLIGHT}) {
        for (let i = done; i < done + ${IN_FLIGHT}; i++) last = consume(${key})
        await last
      }
      return total / (Number(process.hrtime.bigint() - start) / 1e9)
    }`
  return new Function(`return [${loop('`warm:${i % 1000}`')}, ${loop("'hot'")}]`)()
}

/**
 * The hot key again, with the peer in this same process: short slices of each in turn, and the
 * median of the slices' ratios. A slowdown of the shared machine then falls on both sides of
 * a ratio, where between fresh processes it falls on whichever one happens to run.
 */
async function pairedHot(make, makePeer) {
  const sides = []
  for (const build of [make, makePeer]) {
    const [warmLoop, hotLoop] = ownLoops()
    await warmLoop(build(), 1_000_000)
    sides.push({ hotLoop, consume: build(), rates: [] })
  }
  for (let slice = 0; slice < PAIRED_SLICES; slice++) {
    for (const side of sides) side.rates.push(await side.hotLoop(side.consume, PAIRED_SLICE_OPS))
  }
  return median(sides[0].rates.map((rate, i) => rate / sides[1].rates[i]))
}

/** rate-limiter-flexible's decisions per second on one hot key over its limit (10). */
async function peerOverLimit() {
  const { RateLimiterMemory } = require('rate-limiter-flexible')
  const rl = new RateLimiterMemory({ points: 10, duration: 3600 })
  const settled = () => {}
  const consume = (key) => rl.consume(key).then(settled, settled)
  await decisionsPerSecond((i) => consume(`warm:${i % 1000}`), 1_000_000)
  return decisionsPerSecond(() => consume('hot'), HOT_OPS / 10)
}

/** One variant, in this (child) process: prints its figures as one JSON line. */
async function measureVariant(name) {
  const all = variants()
  const make = all.get(name)
  if (!make) throw new Error(`no variant named ${name}`)
  const pairedHotRatio = name === PEER ? 1 : await pairedHot(make, all.get(PEER))
  // Warm up on keys of their own, so the JIT has seen the code before the clock runs.
  let consume = make()
  await decisionsPerSecond((i) => consume(`warm:${i % 1000}`), 1_000_000)
  consume = make()
  const hot = await decisionsPerSecond(() => consume('hot'), HOT_OPS)
  consume = make()
  const before = heapUsed()
  // Keys are built per call, as a server builds them per request.
  const insert = await decisionsPerSecond((i) => consume(`user:${i}`), KEYS)
  const bytesPerKey = (heapUsed() - before) / KEYS
  const update = await decisionsPerSecond((i) => consume(`user:${i}`), KEYS)
  // The peer on one key over its limit, last so that its other figures run on code that has
  // not seen a rejection yet.
  const overLimit = name === PEER ? await peerOverLimit() : undefined
  process.stdout.write(
    JSON.stringify({ name, hot, pairedHotRatio, insert, update, bytesPerKey, overLimit }) + '\n',
  )
}

function runVariant(name) {
  const result = spawnSync(process.execPath, ['--expose-gc', __filename, '--variant', name], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  if (result.status !== 0) throw new Error(`variant ${name} failed (exit ${result.status})`)
  return JSON.parse(result.stdout.trim().split('\n').pop())
}

function main() {
  const names = [...variants().keys()]
  const runs = new Map(names.map((n) => [n, []]))
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of names) {
      const r = runVariant(name)
      runs.get(name).push(r)
      console.error(
        `round ${round + 1}/${ROUNDS} ${name}: hot ${fmt(r.hot)}/s, update ${fmt(r.update)}/s`,
      )
    }
  }
  const rows = names.map((name) => {
    const rs = runs.get(name)
    const pick = (k) => median(rs.map((r) => r[k]))
    return {
      name,
      peer: name === PEER,
      hot: pick('hot'),
      pairedHotRatio: pick('pairedHotRatio'),
      insert: pick('insert'),
      update: pick('update'),
      bytesPerKey: pick('bytesPerKey'),
      overLimit: name === PEER ? pick('overLimit') : undefined,
    }
  })
  const peer = rows.find((r) => r.peer)
  const body = table(
    [
      'limiter',
      'hot key ops/s',
      'vs peer',
      'paired',
      `${fmt(KEYS)} keys: insert ops/s`,
      'vs peer',
      'update ops/s',
      'vs peer',
      'heap B/key',
      'vs peer',
    ],
    rows.map((r) => [
      r.name,
      fmt(r.hot),
      `${(r.hot / peer.hot).toFixed(2)}x`,
      `${r.pairedHotRatio.toFixed(2)}x`,
      fmt(r.insert),
      `${(r.insert / peer.insert).toFixed(2)}x`,
      fmt(r.update),
      `${(r.update / peer.update).toFixed(2)}x`,
      r.bytesPerKey.toFixed(0),
      `${(r.bytesPerKey / peer.bytesPerKey).toFixed(2)}x`,
    ]),
  )
  const note = [
    '',
    '',
    `${fmt(HOT_OPS)} decisions on one hot key, then ${fmt(KEYS)} distinct keys (\`user:<i>\`, built per call: first touch, then a second pass); every request admitted (limits never reached) except in sliding-log's hot-key row. Medians of ${ROUNDS} rounds; every variant runs in a fresh process, one at a time.`,
    `Decisions are made ${IN_FLIGHT} at a time, as concurrent requests make them, and the last promise of each ${IN_FLIGHT} is awaited: both libraries decide synchronously inside the call, so every decision is made and settled by then, and the figure is the limiter's cost rather than the harness's.`,
    `sliding-log keeps one timestamp per admitted request, so it runs at limit 10, and its hot key is over its limit after 10 decisions (as a hot key of an exact log always is): its hot-key figures are of rejections, against the peer's admissions. On one key over its limit (10), rate-limiter-flexible makes ${fmt(peer.overLimit)} decisions/s (it rejects its promise, which the caller must catch; measured with a \`.then\` that catches). sliding-log's million-key rows admit every request, as the others do.`,
    `"paired": the hot key again, with ${PEER} in the same process, in ${PAIRED_SLICES} alternating slices of ${fmt(PAIRED_SLICE_OPS)} decisions each through a copy of the loop of its own; the median of the slices' ratios. A slowdown of the shared machine then falls on both sides of each ratio, where the fresh-process figures beside it are each exposed to it alone.`,
  ].join('\n')
  console.log(
    writeResult(
      'core',
      'Decisions per second and memory per key (memory store)',
      body + note,
      ['@sluice/core', 'rate-limiter-flexible'],
      { hotOps: HOT_OPS, keys: KEYS, inFlight: IN_FLIGHT, rounds: ROUNDS, rows },
    ),
  )
}

const variantAt = process.argv.indexOf('--variant')
if (variantAt > 0) {
  measureVariant(process.argv[variantAt + 1]).catch((error) => {
    console.error(error)
    process.exit(1)
  })
} else {
  if (!globalThis.gc) console.warn('run with --expose-gc for stable memory figures')
  main()
}
