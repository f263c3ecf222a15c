'use strict'
// Measures @sluice/koa/compat as a drop-in for koa-ratelimit: runs koa-ratelimit's own test suite
// with only the import of its public entry (`require('..')`) swapped for the compatibility entry,
// and prints passed/total. Every test of the suite goes through the public entry (memory and
// Redis drivers alike), so every test counts.
//
//   npm run build && node bench/compat/koa-ratelimit.js <checkout> [--peer] [--list]
//
// <checkout>: a release tag of github.com/koajs/ratelimit (v5.1.0 is the newest) with its dev
// dependencies installed (`npm install` there). `--peer` runs the same harness against the
// peer's own entry (the baseline: every test must pass); `--list` names each test that failed.
//
// What the harness does: it copies the checkout's test/ folder to <checkout>/.sluice-compat-test
// (so the peer's node_modules resolve), rewrites `require('..')` to the entry under test, and
// runs the copy with the peer's mocha (`-r should --exit`, as its `npm test`). The peer's Redis
// tests connect with `new Redis()`, ioredis's default port: the harness starts its own
// redis-server on a free loopback port (`--save '' --appendonly no`) and, by preloading this
// file into mocha, points ioredis's default port there, so no Redis on 6379 is ever touched.
// The checkout itself is not changed.
const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const path = require('node:path')
const { startRedisServer } = require('../lib')

const PORT_ENV = 'SLUICE_COMPAT_REDIS_PORT'
const COPY_DIR = '.sluice-compat-test'
const COMPAT_ENTRY = path.resolve(__dirname, '../../packages/koa/dist/compat.js')
const PEER_IMPORT = /require\((['"])\.\.\1\)/g

/** In mocha's process (preloaded): ioredis's default port becomes the harness's server. */
function redirectRedis(port) {
  const ioredis = require(require.resolve('ioredis', { paths: [process.cwd()] }))
  ioredis.defaultOptions.port = port
  ioredis.defaultOptions.host = '127.0.0.1'
}

/** Copies the peer's tests with `require('..')` pointed at `entry`. */
function copyTests(checkout, entry) {
  const target = path.join(checkout, COPY_DIR)
  fs.rmSync(target, { recursive: true, force: true })
  fs.cpSync(path.join(checkout, 'test'), target, { recursive: true })
  const files = fs.readdirSync(target).filter((name) => name.endsWith('.spec.js'))
  for (const name of files) {
    const file = path.join(target, name)
    const text = fs.readFileSync(file, 'utf8')
    fs.writeFileSync(file, text.replace(PEER_IMPORT, `require(${JSON.stringify(entry)})`))
  }
  return { target, files: files.map((name) => path.join(target, name)) }
}

/** Runs the peer's mocha on its tests pointed at `entry`; the full titles of the tests that passed and failed. */
function runSuite(checkout, entry, port) {
  const { target, files } = copyTests(checkout, entry)
  try {
    const mocha = path.join(checkout, 'node_modules', 'mocha', 'bin', 'mocha')
    const run = spawnSync(
      process.execPath,
      [mocha, '-r', 'should', '-r', __filename, '--exit', '--reporter', 'json', ...files],
      { cwd: checkout, env: { ...process.env, [PORT_ENV]: String(port) }, encoding: 'utf8' },
    )
    const start = run.stdout.indexOf('{\n')
    if (start < 0) throw new Error(`mocha printed no report:\n${run.stderr}`)
    const report = JSON.parse(run.stdout.slice(start))
    return {
      passed: new Set(report.passes.map((test) => test.fullTitle)),
      // A failed hook stands for the tests it kept from running; they are absent from passes.
      failed: report.failures.map((test) => test.fullTitle),
    }
  } finally {
    fs.rmSync(target, { recursive: true, force: true })
  }
}

async function main() {
  const args = process.argv.slice(2)
  const checkout = args.find((arg) => !arg.startsWith('--'))
  if (checkout === undefined) {
    console.error('usage: node bench/compat/koa-ratelimit.js <checkout> [--peer] [--list]')
    process.exit(2)
  }
  const root = path.resolve(checkout)
  const peerOnly = args.includes('--peer')
  if (!peerOnly && !fs.existsSync(COMPAT_ENTRY)) {
    console.error(`${COMPAT_ENTRY} is missing: run npm run build first`)
    process.exit(2)
  }
  const redis = await startRedisServer()
  try {
    // The peer's own run lists the tests; one missing from the swapped run counts as failed.
    const reference = runSuite(root, root, redis.port)
    if (reference.failed.length > 0) {
      console.error(`the peer fails its own suite here: ${reference.failed.join('; ')}`)
    }
    const measured = peerOnly ? reference : runSuite(root, COMPAT_ENTRY, redis.port)
    const tests = [...reference.passed, ...reference.failed]
    const failed = tests.filter((title) => !measured.passed.has(title))
    const against = peerOnly ? 'koa-ratelimit itself' : '@sluice/koa/compat'
    console.log(
      `koa-ratelimit public-entry tests against ${against}: ${tests.length - failed.length}/${tests.length}`,
    )
    if (args.includes('--list')) for (const title of failed) console.log(`  failed: ${title}`)
  } finally {
    await redis.stop()
  }
}

if (require.main === module) {
  main().catch((error) => {
    console.error(error)
    process.exit(1)
  })
} else if (process.env[PORT_ENV] !== undefined) {
  redirectRedis(Number(process.env[PORT_ENV]))
}
