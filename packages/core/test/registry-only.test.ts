// The registry is the one place that knows the algorithms: no source file outside it (and the
// algorithms' own files beside it) branches on an algorithm's name or code. Code that needs a
// property of an algorithm reads the registry's row (family, state, takes, oneCount, ...).
// Names as data stay allowed: a default (`algorithm: 'fixed-window'`), a docs string.
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { REGISTRY } from '../src/algorithms'

const ROOT = join(__dirname, '..', '..', '..')

/** The registry and each algorithm's own transitions and Lua. */
const ALGORITHMS_DIR = join('packages', 'core', 'src', 'algorithms')
/** The test kit's scenarios test named algorithms, each on purpose. */
const TESTKIT = join('packages', 'testkit')

const WORDS = REGISTRY.flatMap((row) => {
  const first = 'firstRequest' in row ? [row.firstRequest.code] : []
  return [row.name, row.code, ...first]
})

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\-]/g, '\\$&')
}

const WORD = `['"\`](?:${WORDS.map(escape).join('|')})['"\`]`
/** A name or code as an object's key, quoted or bare (`fw: 'f'`). */
const KEY = `(?:${WORD}|\\b(?:${WORDS.filter((word) => /^\w+$/.test(word)).join('|')}))`

/** Ways code branches on (or tabulates) a name: a comparison, a case, a membership test, a key. */
const BRANCHES = [
  new RegExp(`[!=]==?\\s*${WORD}`),
  new RegExp(`${WORD}\\s*[!=]==?`),
  new RegExp(`\\bcase\\s+${WORD}`),
  new RegExp(`\\.(?:includes|indexOf|has)\\(\\s*${WORD}`),
  new RegExp(`\\[[^\\]]*${WORD}[^\\]]*\\]\\s*\\.(?:includes|indexOf|some)\\(`),
  new RegExp(`new Set\\(\\[[^\\]]*${WORD}`),
  new RegExp(`(?:^|[{,])\\s*${KEY}\\s*:(?!:)`),
]

/** The lines of `text` that branch on an algorithm's name; comment lines are prose. */
function branchingLines(text: string): string[] {
  return text
    .split('\n')
    .filter((line) => !/^\s*(?:\/\/|\/?\*)/.test(line))
    .filter((line) => BRANCHES.some((pattern) => pattern.test(line)))
    .map((line) => line.trim())
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return sourceFiles(path)
    return name.endsWith('.ts') ? [path] : []
  })
}

function scanned(): string[] {
  const packages = join(ROOT, 'packages')
  return readdirSync(packages)
    .map((name) => join(packages, name, 'src'))
    .filter((src) => statSync(src, { throwIfNoEntry: false })?.isDirectory() === true)
    .flatMap(sourceFiles)
    .filter((file) => {
      const path = relative(ROOT, file)
      return !path.startsWith(ALGORITHMS_DIR) && !path.startsWith(TESTKIT)
    })
}

test('the scan finds a branch on a name, and lets a name as data pass', () => {
  expect(branchingLines("if (policy.algorithm === 'sliding-log') return")).toHaveLength(1)
  expect(branchingLines("const fixed = 'fixed-window' !== algorithm")).toHaveLength(1)
  expect(branchingLines("    case 'gcra':")).toHaveLength(1)
  expect(branchingLines("if (['gcra', 'token-bucket'].includes(a)) x()")).toHaveLength(1)
  expect(branchingLines("const codes = { 'leaky-bucket': 'lb' }")).toHaveLength(1)
  expect(branchingLines("if (code === 'sw') return")).toHaveLength(1)
  expect(branchingLines("  fw: 'f',")).toHaveLength(1)
  expect(branchingLines("  return limit <= LOG_LIMIT ? 'sliding-log' : 'sliding-window'")).toEqual(
    [],
  )
  expect(branchingLines("    algorithm: 'fixed-window',")).toEqual([])
  expect(branchingLines("   * @default 'sliding-window'")).toEqual([])
})

test('no source file outside the registry branches on an algorithm name or code', () => {
  const files = scanned()
  expect(files.length).toBeGreaterThan(100)
  const found = files.flatMap((file) =>
    branchingLines(readFileSync(file, 'utf8')).map((line) => `${relative(ROOT, file)}: ${line}`),
  )
  expect(found).toEqual([])
})
