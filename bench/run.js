'use strict'
// npm run bench [core|redis|http|instructions|memcached|postgres|hang|edge|local-tier|packed-flood|accuracy|pictures|charts|all]: each part
// runs in its own process. charts comes last: it draws docs/img/bench-*.svg from the JSON the
// others wrote.
const { spawnSync } = require('node:child_process')
const path = require('node:path')
const fs = require('node:fs')

const parts = {
  core: 'core.js',
  redis: 'redis.js',
  http: 'http.js',
  instructions: 'instructions.js',
  memcached: 'memcached.js',
  postgres: 'postgres.js',
  hang: 'hang.js',
  edge: 'edge.js',
  'local-tier': 'local-tier.js',
  'packed-flood': 'packed-flood.js',
  accuracy: 'accuracy.js',
  pictures: 'pictures.js',
  charts: 'charts.js',
}
const wanted = process.argv[2] ?? 'all'
const names = wanted === 'all' ? Object.keys(parts) : [wanted]
for (const name of names) {
  const file = path.join(__dirname, parts[name] ?? '')
  if (!parts[name] || !fs.existsSync(file)) {
    if (wanted !== 'all') {
      console.error(`no benchmark named ${name}`)
      process.exit(1)
    }
    continue
  }
  console.log(`\n== ${name}`)
  // A part that needs a tool the machine lacks (valgrind) skips itself in a run of all parts.
  const env = { ...process.env, BENCH_RUN_ALL: wanted === 'all' ? '1' : '' }
  const result = spawnSync(process.execPath, ['--expose-gc', file], { stdio: 'inherit', env })
  if (result.status !== 0) process.exit(result.status ?? 1)
}
