'use strict'
// Measures @sluice/express/compat as a drop-in for express-rate-limit: runs express-rate-limit's
// own test suite with only the import of its public entry swapped for the compatibility entry,
// and prints passed/total for the tests that use that entry, and for its MemoryStore's suite with
// the store swapped for the compat entry's (tests of its other internal modules, its
// validations, console logger and header setters, are not counted).
//
// Run (after `npm run build -w packages/express`):
//   node bench/compat/express-rate-limit.js <express-rate-limit checkout> [--peer] [--list]
// The checkout is a release tag of github.com/express-rate-limit/express-rate-limit with its
// dev dependencies installed (`npm install --ignore-scripts`). `--peer` runs the same harness
// without the swap (express-rate-limit against itself: all must pass); `--list` prints each
// counted test that failed. Its suite needs no Redis or other server. The checkout is not
// changed: its test folder is copied to a temporary directory beside it and swapped there.
const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const path = require('node:path')

const PUBLIC_ENTRY = /(['"])\.\.\/\.\.\/source\/index(\.js)?\1/g
// Its MemoryStore's own suite imports the store from its module: swapped for the compat entry's
// MemoryStore (express-rate-limit's store interface on Sluice's core) and counted too.
const MEMORY_STORE = /(['"])\.\.\/\.\.\/source\/memory-store(\.js)?\1/g
const COMPAT_ENTRY = path.resolve(__dirname, '../../packages/express/dist/compat.js')

/** Names a test file imports from the peer's internal modules (not its entry, not its types). */
function internalBindings(source) {
  const names = []
  const imports =
    /import\s+(?:type\s+)?\{([^}]*)\}\s+from\s+['"]\.\.\/\.\.\/source\/([\w-]+)(?:\.js)?['"]/g
  for (const [, list, module] of source.matchAll(imports)) {
    if (module === 'index' || module === 'types' || module === 'memory-store') continue
    for (const item of list.split(',')) {
      const name = item
        .replace(/^\s*type\s+/, '')
        .split(/\s+as\s+/)
        .pop()
        .trim()
      if (name !== '') names.push(name)
    }
  }
  return names
}

/** The text of the `it(...)` call starting at a 1-based line and column, by balancing brackets. */
function callText(source, line, column) {
  const lines = source.split('\n')
  let start = 0
  for (let i = 0; i < line - 1; i++) start += lines[i].length + 1
  start += column - 1
  let depth = 0
  for (let i = source.indexOf('(', start); i < source.length; i++) {
    if (source[i] === '(') depth++
    else if (source[i] === ')' && --depth === 0) return source.slice(start, i + 1)
  }
  return source.slice(start)
}

// Suites of internal modules, not counted (they import these modules' values directly).
const INTERNAL_SUITES = ['validations', 'console-logger']

/** True when a file imports values (not only types) from the public entry or the memory store. */
function importsEntry(source) {
  const imports =
    /import\s+(type\s+)?[^;]*?\s+from\s+['"]\.\.\/\.\.\/source\/(?:index|memory-store)(?:\.js)?['"]/g
  return [...source.matchAll(imports)].some((match) => match[1] === undefined)
}

/** True when a file imports a value from one of the excepted internal modules. */
function testsInternals(source) {
  return INTERNAL_SUITES.some((module) =>
    new RegExp(
      `import\\s+(?!type\\s)[^;]*from\\s+['"]\\.\\./\\.\\./source/${module}(?:\\.js)?['"]`,
    ).test(source),
  )
}

/**
 * True when a test uses the public entry: its file imports values from it and tests no excepted
 * internal module, and the test itself uses no value imported from another internal module
 * (express-rate-limit's header setters).
 */
function countsAsPublic(source, test) {
  if (!importsEntry(source) || testsInternals(source)) return false
  const internal = internalBindings(source)
  if (internal.length === 0) return true
  if (test.location === undefined || test.location === null) return false
  const body = callText(source, test.location.line, test.location.column)
  return !internal.some((name) => new RegExp(`\\b${name}\\b`).test(body))
}

function copyTests(checkout, into, swap) {
  fs.cpSync(path.join(checkout, 'test', 'library'), path.join(into, 'test', 'library'), {
    recursive: true,
  })
  for (const name of ['tsconfig.json', 'package.json']) {
    fs.copyFileSync(path.join(checkout, name), path.join(into, name))
  }
  // Its jest config, with ts-jest's type errors not failing a whole file (both runs alike): its
  // memory-store suite reads the peer store's internal fields (interval, current, previous) in
  // 3 of its 14 tests, and a type error there would fail the 11 that use only the interface.
  // Those 3 still fail when run against another store, as they should.
  const config = JSON.parse(fs.readFileSync(path.join(checkout, 'jest.config.json'), 'utf8'))
  config.transform = { '^.+\\.tsx?$': ['ts-jest', { useESM: true, diagnostics: false }] }
  fs.writeFileSync(path.join(into, 'jest.config.json'), JSON.stringify(config))
  fs.symlinkSync(path.join(checkout, 'node_modules'), path.join(into, 'node_modules'))
  fs.symlinkSync(path.join(checkout, 'source'), path.join(into, 'source'))
  if (!swap) return
  const dir = path.join(into, 'test', 'library')
  for (const file of fs.readdirSync(dir)) {
    if (!file.endsWith('.ts')) continue
    const full = path.join(dir, file)
    const text = fs.readFileSync(full, 'utf8')
    const swapped = text
      .replace(PUBLIC_ENTRY, JSON.stringify(COMPAT_ENTRY))
      .replace(MEMORY_STORE, JSON.stringify(COMPAT_ENTRY))
    fs.writeFileSync(full, swapped)
  }
}

/** Runs the peer's jest on a copy of its tests (swapped or not); the results by file and test. */
function runSuite(root, swap, verbose) {
  const work = fs.mkdtempSync(path.join(path.dirname(root), '.sluice-compat-'))
  try {
    copyTests(root, work, swap)
    const results = path.join(work, 'results.json')
    const jest = path.join(root, 'node_modules', 'jest', 'bin', 'jest.js')
    spawnSync(
      process.execPath,
      [jest, '--coverage=false', '--json', '--testLocationInResults', `--outputFile=${results}`],
      { cwd: work, stdio: ['ignore', 'ignore', verbose ? 'inherit' : 'ignore'] },
    )
    const report = JSON.parse(fs.readFileSync(results, 'utf8'))
    const byTest = new Map()
    for (const file of report.testResults) {
      const relative = path.relative(work, file.name)
      if (file.assertionResults.length === 0 && file.message !== '') {
        if (verbose) console.error(`${relative} did not run: ${file.message.split('\n')[0]}`)
      }
      // Names repeat (it.each), so a test is also known by its place in its file.
      file.assertionResults.forEach((test, place) => {
        byTest.set(`${relative}\0${place}\0${test.fullName}`, test)
      })
    }
    return byTest
  } finally {
    fs.rmSync(work, { recursive: true, force: true })
  }
}

function main() {
  const args = process.argv.slice(2)
  const checkout = args.find((arg) => !arg.startsWith('--'))
  if (checkout === undefined) {
    console.error('usage: node bench/compat/express-rate-limit.js <checkout> [--peer] [--list]')
    process.exit(2)
  }
  const root = path.resolve(checkout)
  const verbose = args.includes('--verbose')
  if (!fs.existsSync(COMPAT_ENTRY)) {
    console.error(`${COMPAT_ENTRY} is missing: run npm run build -w packages/express first`)
    process.exit(2)
  }
  // The peer's own run lists the tests; a test missing from the swapped run (its file failed
  // to compile or load) counts as failed.
  const reference = runSuite(root, false, verbose)
  const measured = args.includes('--peer') ? reference : runSuite(root, true, verbose)
  let passed = 0
  let total = 0
  const failed = []
  const sources = new Map()
  for (const [id, test] of reference) {
    const relative = id.slice(0, id.indexOf('\0'))
    if (!sources.has(relative)) {
      sources.set(relative, fs.readFileSync(path.join(root, relative), 'utf8'))
    }
    if (test.status === 'pending' || !countsAsPublic(sources.get(relative), test)) continue
    total++
    if (measured.get(id)?.status === 'passed') passed++
    else failed.push(`${path.basename(relative)}: ${test.fullName}`)
  }
  const against = args.includes('--peer') ? 'express-rate-limit itself' : '@sluice/express/compat'
  console.log(`express-rate-limit public-entry tests against ${against}: ${passed}/${total}`)
  if (args.includes('--list')) for (const name of failed) console.log(`  failed: ${name}`)
}

main()
