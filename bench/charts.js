'use strict'
// Draws the benchmark results in docs/bench/<part>.json (written by the bench scripts through
// lib.js writeResult) as bar charts in docs/img/bench-<part>.svg: hand-written SVG on the
// primitives the simulator's pictures use (@sluice/cli: escaping, palette, text and
// rects; sans-serif 10 px). Every input is checked first; a missing or malformed file is
// reported with the path of the bad field and the process exits 1 (the charts of the valid
// files are still written).
// It also rewrites the results section of docs/benchmarks.md (between its results markers):
// each part's headline figures from the same files.
// The parts, in charts/: input.js (reading and checks), style.js, layout.js, bars.js,
// legend.js, format.js, figures/ (one function per part) and summaries.js (the results section).
// Run: node bench/charts.js [part ...]  (after npm run build; BENCH_RESULTS_DIR,
// BENCH_IMG_DIR and BENCH_DOCS_FILE read and write elsewhere)
const fs = require('node:fs')
const path = require('node:path')
const { resultsDir } = require('./lib')
const { InputError, loadRecord } = require('./charts/input')
const { RESULTS_BEGIN, RESULTS_END, summaries, writeResultsSection } = require('./charts/summaries')

/** One drawing per part, in the order they are written. */
const charts = { ...require('./charts/figures/frameworks'), ...require('./charts/figures/stores') }

function main() {
  const from = resultsDir()
  const to = path.resolve(process.env.BENCH_IMG_DIR ?? path.join(__dirname, '../docs/img'))
  const docs = path.resolve(
    process.env.BENCH_DOCS_FILE ?? path.join(__dirname, '../docs/benchmarks.md'),
  )
  const wanted = process.argv.length > 2 ? process.argv.slice(2) : Object.keys(charts)
  const failures = []
  /** Every part's valid record, for the results section, whichever charts were asked for. */
  const records = new Map()
  const load = (name) => loadRecord(from, name)
  fs.mkdirSync(to, { recursive: true })
  for (const name of wanted) {
    const file = path.join(from, `${name}.json`)
    try {
      if (!charts[name]) throw new InputError(`no chart named ${name}`)
      const record = load(name)
      records.set(name, record)
      const svg = charts[name](record)
      const out = path.join(to, `bench-${name}.svg`)
      fs.writeFileSync(out, svg)
      console.log(`${path.relative(process.cwd(), out)}  ${svg.length} B`)
    } catch (error) {
      if (!(error instanceof InputError)) throw error
      failures.push(`${path.relative(process.cwd(), file)}: ${error.message}`)
    }
  }
  for (const name of Object.keys(summaries)) {
    if (records.has(name) || wanted.includes(name)) continue
    try {
      records.set(name, load(name))
    } catch (error) {
      if (!(error instanceof InputError)) throw error
    }
  }
  if (!writeResultsSection(docs, records)) {
    failures.push(
      `${path.relative(process.cwd(), docs)}: has no ${RESULTS_BEGIN} ... ${RESULTS_END}`,
    )
  } else {
    console.log(`${path.relative(process.cwd(), docs)}  results section`)
  }
  if (failures.length > 0) {
    for (const f of failures) console.error(`charts: ${f}`)
    process.exit(1)
  }
}

main()
