'use strict'
// Shared helpers of the benchmark scripts: timing, tables, and the machine record.
const os = require('node:os')
const path = require('node:path')
const fs = require('node:fs')

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

/** Writes a result file under docs/bench/ with the machine and versions on top. */
function writeResult(name, title, body, packages) {
  const dir = path.resolve(__dirname, '../docs/bench')
  fs.mkdirSync(dir, { recursive: true })
  const m = machine()
  const versions = packages.map((p) => `${p} ${versionOf(p)}`).join(', ')
  const text = `# ${title}\n\nMeasured ${m.date} on ${m.cpus}, ${m.memory}, Node ${m.node}. Packages: ${versions}.\n\n${body}\n`
  fs.writeFileSync(path.join(dir, `${name}.md`), text)
  return text
}

module.exports = { machine, throughput, heapUsed, table, fmt, writeResult, versionOf }
