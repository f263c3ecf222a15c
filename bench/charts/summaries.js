'use strict'
// The results section of docs/benchmarks.md (between its results markers): each part's
// headline figures, from the same result files as the charts.
const fs = require('node:fs')
const { fmt } = require('../lib')
const { capital, pct, span } = require('./format')
const { isNumber } = require('./input')

const RESULTS_BEGIN = '<!-- results:begin -->'
const RESULTS_END = '<!-- results:end -->'
const link = (record) => `[${record.name}.md](bench/${record.name}.md)`
const when = (record) =>
  `${record.machine.date} on ${record.machine.cpus}, Node ${record.machine.node}`

/** A 429's instructions beside an admitted request's, Sluice's and the peer's (older files: none). */
function rejecting(f) {
  const row = (variant) => f.rows.find((r) => r.variant === variant)
  if (row('sluice-memory-reject') === undefined || row('peer-memory-reject') === undefined)
    return '.'
  const ratio = (who) =>
    (row(`${who}-memory-reject`).instructions / row(`${who}-memory`).instructions).toFixed(2)
  const own = (variant, floor) =>
    `${((row(variant).instructions - row(floor).instructions) / 1000).toFixed(1)}k`
  const beyondFloor =
    row('floor-reject') === undefined
      ? ''
      : `; beyond the least its response costs (the floor rows), Sluice's own work is ${own('sluice-memory', 'floor')} instructions admitting and ${own('sluice-memory-reject', 'floor-reject')} rejecting`
  return `; a 429 costs ${ratio('sluice')}x an admitted request's instructions (${f.peer}: ${ratio('peer')}x)${beyondFloor}.`
}

/** One paragraph (or table) per part: its headline figures, from the same JSON as its chart. */
const summaries = {
  core(record) {
    const { rows, keys } = record.data
    const peer = rows.find((r) => r.peer)
    const sluice = rows.filter((r) => !r.peer)
    const versus = (key) => span(sluice.map((r) => r[key] / peer[key]))
    const paired = sluice.map((r) => r.pairedHotRatio).filter((v) => typeof v === 'number')
    return (
      `Sluice's MemoryStore against ${peer.name}, every algorithm: ` +
      `${versus('hot')}x the decisions per second on one hot key` +
      (paired.length === sluice.length
        ? ` (${span(paired)}x measured side by side in one process)`
        : '') +
      `, ${versus('insert')}x on the first touch of ${fmt(keys)} keys and ${versus('update')}x on the ` +
      `second pass, in ${span(
        sluice.map((r) => r.bytesPerKey),
        (v) => v.toFixed(0),
      )} B of heap per key against ${peer.bytesPerKey.toFixed(0)} B.`
    )
  },
  redis(record) {
    const { rows, keys, inFlight, bytesPerKey } = record.data
    const peer = rows.find((r) => r.peer)
    const sluice = rows.filter((r) => !r.peer)
    const versus = (key) => span(sluice.map((r) => r[key] / peer[key]))
    const sentences = [
      `RedisStore against ${peer.name}, by algorithm: ${versus('inFlight')}x the decisions per ` +
        `second with ${fmt(inFlight)} in flight over ${fmt(keys)} keys, ${versus('sequential')}x ` +
        `one at a time.`,
    ]
    const capped = sluice.filter((r) => isNumber(r.stateCeiling))
    if (capped.length > 0) {
      const share = (r) =>
        `${r.name.replace(/^Sluice RedisStore \((.*)\)$/, '$1')} ${Math.round((100 * r.inFlight) / r.stateCeiling)}%`
      sentences.push(
        `Share of the state ceiling (the same keys' state read and written by a Lua script with ` +
          `no limiter logic, batched alike, same rounds): ${capped.map(share).join(', ')}.`,
      )
    }
    const spread = sluice.every((r) => isNumber(r.hot) && isNumber(r.million))
    if (spread && isNumber(peer.hot) && isNumber(peer.million) && isNumber(record.data.million)) {
      sentences.push(
        `On one hot key ${versus('hot')}x, on ${fmt(record.data.million)} distinct keys ${versus('million')}x.`,
      )
    }
    const ours = bytesPerKey.filter((r) => !r.peer)
    const theirs = bytesPerKey.find((r) => r.peer)
    if (theirs !== undefined && ours.length > 0) {
      sentences.push(
        `Redis holds ${span(
          ours.map((r) => r.bytes),
          (v) => v.toFixed(0),
        )} B per key (MEMORY USAGE) against ${theirs.bytes} B.`,
      )
    }
    return sentences.join(' ')
  },
  http(record) {
    const lines = []
    for (const [name, f] of Object.entries(record.data.frameworks)) {
      const row = (variant) => f.rows.find((r) => r.variant === variant)
      const parts = [
        `Sluice memory costs ${pct(row('sluice-memory').ratio)} of the no-limiter baseline ` +
          `(${f.peer.memory}: ${pct(row('peer-memory').ratio)}` +
          (row('floor')
            ? `; a middleware that only sets the three headers: ${pct(row('floor').ratio)}`
            : '') +
          ')',
      ]
      const ours = row('sluice-redis')
      const theirs = row('peer-redis')
      if (ours && theirs) {
        const ratio = f.versusPeer?.redis
        parts.push(
          `with Redis ${fmt(ours.rps)} req/s against ${fmt(theirs.rps)}` +
            (isNumber(ratio)
              ? ` (${ratio.toFixed(2)}x, the median of each round's ratio)`
              : ' (medians)'),
        )
      }
      lines.push(`- ${capital(name)}: ${parts.join('; ')}.`)
    }
    return lines.join('\n')
  },
  instructions(record) {
    const lines = []
    for (const [name, f] of Object.entries(record.data.frameworks)) {
      const added = (variant) =>
        `${((f.rows.find((r) => r.variant === variant).ratio - 1) * 100).toFixed(1)}%`
      lines.push(
        `- ${capital(name)}: Sluice memory adds ${added('sluice-memory')} to the no-limiter ` +
          `server's instructions per request outside V8's compiler and garbage collector ` +
          `(${f.peer}: ${added('peer-memory')}; a middleware that only sets the three headers: ` +
          `${added('floor')})` +
          rejecting(f),
      )
    }
    return lines.join('\n')
  },
  memcached(record) {
    const { rows } = record.data
    const both = rows.filter((r) => r.redis !== null && r.redis > 0)
    return (
      `MemcachedStore makes ${span(
        rows.map((r) => r.memcached),
        fmt,
      )} decisions per second on the counter algorithms` +
      (both.length > 0
        ? `, ${span(both.map((r) => r.memcached / r.redis))}x RedisStore's on the same machine.`
        : '.')
    )
  },
  accuracy(record) {
    const { totals, limit, windowMs } = record.data
    return [
      `Against an exact sliding window of ${limit} per ${windowMs / 1000} s, over every trace:`,
      '',
      '| algorithm | misclassified | wrongly admitted | wrongly rejected | worst window, x the limit |',
      '| --- | --- | --- | --- | --- |',
      ...totals.map(
        (r) =>
          `| ${r.algorithm} | ${r.misclassifiedPct.toFixed(3)}% | ${r.wronglyAdmittedPct.toFixed(3)}% | ` +
          `${r.wronglyRejectedPct.toFixed(3)}% | ${r.worstWindowAdmitted.toFixed(2)} |`,
      ),
    ].join('\n')
  },
}
const SUMMARY_TITLES = {
  core: 'In-process decisions and memory',
  redis: 'Redis store',
  http: 'HTTP',
  instructions: 'Instructions per HTTP request',
  memcached: 'Memcached store',
  accuracy: 'Accuracy',
}

/** The text between the markers: each part's headline from its valid result file. */
function resultsSection(records) {
  const out = [
    // Written as generated: prettier would realign the tables, and the next run undo it.
    '<!-- prettier-ignore-start -->',
    'Written by `bench/charts.js` from `docs/bench/*.json` (`npm run bench`, or',
    "`npm run bench:charts` after one part): the headline of each part's last run, with the",
    'machine and date it was measured on. The result files hold the full tables.',
  ]
  for (const name of Object.keys(summaries)) {
    const record = records.get(name)
    const title = `**${SUMMARY_TITLES[name]}**`
    out.push(
      '',
      record === undefined
        ? `${title}: no valid result (run \`npm run bench:${name}\`).`
        : `${title} (${when(record)}; ${link(record)}):\n\n${summaries[name](record)}`,
    )
  }
  out.push('<!-- prettier-ignore-end -->')
  return out.join('\n') + '\n'
}

/** Replaces the results section of the docs page; false when its markers are missing. */
function writeResultsSection(file, records) {
  const page = fs.readFileSync(file, 'utf8')
  const begin = page.indexOf(RESULTS_BEGIN)
  const end = page.indexOf(RESULTS_END)
  if (begin < 0 || end < begin) return false
  const next =
    page.slice(0, begin + RESULTS_BEGIN.length) + '\n' + resultsSection(records) + page.slice(end)
  if (next !== page) fs.writeFileSync(file, next)
  return true
}

module.exports = { RESULTS_BEGIN, RESULTS_END, summaries, writeResultsSection }
