'use strict'
// Instructions per in-process decision (createLimiter on a MemoryStore, one hot key, 100 in
// flight as in bench/core.js), and rate-limiter-flexible's RateLimiterMemory beside it, counted
// by valgrind's callgrind: each limiter runs twice in fresh processes, with the same warm-up and
// BENCH_INSTR_CORE_OPS or twice as many counted decisions; the difference of the two totals over
// the difference of decisions is the cost of one decision, without startup and warm-up.
// Run: node bench/instructions-core.js [algorithm ...] (after npm run build; default gcra).
// Prints the figures; the result files are bench:core's.
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { childOrMain, countedPerOperation, envCount } = require('./lib')

const OPS = envCount('BENCH_INSTR_CORE_OPS', 1_000_000)
const WARM = 2_000_000
const IN_FLIGHT = 100
const BIG = 100_000_000
const PEER = 'rate-limiter-flexible'

/** In the child: warm up on 1,000 keys and the hot key, then `ops` hot-key decisions. */
async function child(name, ops) {
  let consume
  if (name === PEER) {
    const { RateLimiterMemory } = require('rate-limiter-flexible')
    const rl = new RateLimiterMemory({ points: BIG, duration: 3600 })
    consume = (key) => rl.consume(key)
  } else {
    const { createLimiter, MemoryStore } = require('@sluice/core')
    const limiter = createLimiter({
      algorithm: name,
      limit: BIG,
      window: '1h',
      store: new MemoryStore(),
    })
    consume = (key) => limiter.consume(key)
  }
  const run = async (total, key) => {
    let last
    for (let done = 0; done < total; done += IN_FLIGHT) {
      for (let i = done; i < done + IN_FLIGHT; i++) last = consume(key(i))
      await last
    }
  }
  await run(WARM / 2, (i) => `warm:${i % 1000}`)
  await run(WARM / 2, () => 'hot')
  await run(ops, () => 'hot')
}

function main() {
  const names = process.argv.slice(2)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-instr-core-'))
  try {
    for (const name of [...(names.length > 0 ? names : ['gcra']), PEER]) {
      const perDecision = countedPerOperation(__filename, name, OPS, dir)
      console.log(`${name}: ${Math.round(perDecision)} instructions per hot-key decision`)
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

childOrMain(child, main)
