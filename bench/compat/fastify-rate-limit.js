'use strict'
// Runs @fastify/rate-limit's own test suite against @sluice/fastify/compat with only the import of
// the peer's public entry changed, and prints how many of its tests pass.
//
//   node bench/compat/fastify-rate-limit.js <peer-checkout> [--peer | --main] [--verbose]
//
// <peer-checkout>: a checkout of github.com/fastify/fastify-rate-limit (a release tag) with its
// dev dependencies installed (`npm install --ignore-scripts` there). Build this repository first
// (`npm run build`). --peer runs the same harness against the peer's own entry (the baseline,
// which should pass every test); --main against @sluice/fastify's main entry (what the docs
// offered before the compat entry); --verbose lists every test that fails.
//
// What the harness does, and nothing more: it copies the peer's test/ folder next to it
// (<peer-checkout>/.sluice-compat-test, so the peer's node_modules still resolve), rewrites each
// `require('../index')` / `require('../../index')` to the entry under test, and runs the copy with
// `node --test`. The peer's Redis tests connect to 127.0.0.1 on ioredis's default port; the
// harness starts its own redis-server (`--port <free port> --save '' --appendonly no`) and, by
// preloading this file, points ioredis's default port there, so a machine's own Redis on 6379 is
// never touched. Every test in the peer's suite goes through its public entry (the plugin and its
// `normalizeIP` export), so every test counts.
const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const path = require('node:path')
const { startRedisServer } = require('../lib')

const REDIS_PORT_ENV = 'SLUICE_COMPAT_REDIS_PORT'
// A test that hangs fails after this long instead of stopping the run.
const TEST_TIMEOUT_MS = 30_000
const COPY_DIR = '.sluice-compat-test'
const DIST = path.resolve(__dirname, '../../packages/fastify/dist')

/** The entry under test and its name, from the command line. */
function entryOf(args, root) {
  if (args.includes('--peer')) return { file: path.join(root, 'index.js'), name: 'itself' }
  if (args.includes('--main')) return { file: path.join(DIST, 'index.js'), name: '@sluice/fastify' }
  return { file: path.join(DIST, 'compat.js'), name: '@sluice/fastify/compat' }
}

/** Preloaded into each test process: ioredis's default port becomes the harness's server. */
function redirectRedis(port) {
  const ioredis = require(require.resolve('ioredis', { paths: [process.cwd()] }))
  ioredis.defaultOptions.port = port
}

/** Copies the peer's tests with the entry's import swapped; returns the copied test files. */
function copyTests(peerDir, entry) {
  const target = path.join(peerDir, COPY_DIR)
  fs.rmSync(target, { recursive: true, force: true })
  const files = []
  const walk = (from, to) => {
    fs.mkdirSync(to, { recursive: true })
    for (const entryName of fs.readdirSync(from, { withFileTypes: true })) {
      const source = path.join(from, entryName.name)
      const copy = path.join(to, entryName.name)
      if (entryName.isDirectory()) walk(source, copy)
      else if (entryName.name.endsWith('.js')) {
        const text = fs.readFileSync(source, 'utf8')
        fs.writeFileSync(
          copy,
          text.replace(
            /require\((['"])(?:\.\.\/)+index(?:\.js)?\1\)/g,
            `require(${JSON.stringify(entry)})`,
          ),
        )
        if (entryName.name.endsWith('.test.js')) files.push(copy)
      } else fs.copyFileSync(source, copy)
    }
  }
  walk(path.join(peerDir, 'test'), target)
  return files.sort()
}

/**
 * Every test's result from node's TAP output. Suites (`describe`) are not tests, and neither is
 * the line node adds for a test file whose process failed outside its tests (named by its path).
 */
function testResults(tap, files) {
  const lines = tap.split('\n')
  const results = []
  lines.forEach((line, at) => {
    const match = /^\s*(not ok|ok) \d+ - (.*)$/.exec(line)
    if (!match) return
    const end = lines.findIndex((next, index) => index > at && next.trim() === '...')
    if (lines.slice(at + 1, end).some((next) => next.trim() === "type: 'suite'")) return
    // The peer's own suite skips some tests: they are not counted.
    if (/ # SKIP\b/.test(match[2]) || files.includes(match[2])) return
    results.push({ passed: match[1] === 'ok', name: match[2] })
  })
  return results
}

async function main() {
  const args = process.argv.slice(2)
  const peerDir = args.find((arg) => !arg.startsWith('--'))
  if (!peerDir) {
    console.error(
      'usage: node bench/compat/fastify-rate-limit.js <peer-checkout> [--peer | --main] [--verbose]',
    )
    process.exit(2)
  }
  const root = path.resolve(peerDir)
  const entry = entryOf(args, root)
  if (!fs.existsSync(entry.file))
    throw new Error(`${entry.file} is missing (build with npm run build)`)
  const files = copyTests(root, entry.file)
  const redis = await startRedisServer()
  try {
    const run = spawnSync(
      process.execPath,
      [
        '--test',
        '--test-reporter=tap',
        '--test-concurrency=1',
        `--test-timeout=${TEST_TIMEOUT_MS}`,
        ...files,
      ],
      {
        cwd: root,
        encoding: 'utf8',
        maxBuffer: 256 * 1024 * 1024,
        env: {
          ...process.env,
          [REDIS_PORT_ENV]: String(redis.port),
          NODE_OPTIONS: `--require ${JSON.stringify(__filename)}`,
        },
      },
    )
    const results = testResults(run.stdout, files)
    const passed = results.filter((result) => result.passed).length
    if (args.includes('--verbose'))
      for (const result of results) if (!result.passed) console.log(`failed: ${result.name}`)
    const version = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).version
    console.log(
      `@fastify/rate-limit ${version} test suite against ${entry.name}: ${passed}/${results.length} passed`,
    )
  } finally {
    await redis.stop()
    fs.rmSync(path.join(root, COPY_DIR), { recursive: true, force: true })
  }
}

if (require.main === module)
  main().catch((error) => {
    console.error(error)
    process.exit(1)
  })
else if (process.env[REDIS_PORT_ENV]) redirectRedis(Number(process.env[REDIS_PORT_ENV]))
