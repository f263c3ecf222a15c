'use strict'
// Draws the six algorithms on the same bursty trace (5 requests per second, meters with the
// default burst = limit) into docs/img/<algorithm>.svg, as docs/algorithms.md shows them.
// Run: node bench/pictures.js  (after npm run build; BENCH_IMG_DIR writes elsewhere)
const fs = require('node:fs')
const path = require('node:path')
const { ALGORITHMS } = require('@sluice/core')
const { makeTrace, renderSvg, simulate } = require('@sluice/cli')

const LIMIT = 5
const WINDOW_MS = 1000
const dir = path.resolve(process.env.BENCH_IMG_DIR ?? path.join(__dirname, '../docs/img'))
fs.mkdirSync(dir, { recursive: true })
const trace = makeTrace('bursty', { limit: LIMIT, windowMs: WINDOW_MS, seed: 1 })
for (const algorithm of ALGORITHMS) {
  const result = simulate(trace, { algorithm, limit: LIMIT, window: WINDOW_MS })
  const svg = renderSvg(result, {
    title: `${algorithm}, limit ${LIMIT} per ${WINDOW_MS / 1000} s: ${result.admitted} of ${trace.length} requests admitted`,
    width: 480,
    height: 240,
  })
  const file = path.join(dir, `${algorithm}.svg`)
  fs.writeFileSync(file, svg)
  console.log(`${path.relative(process.cwd(), file)}  ${svg.length} B`)
}
