/**
 * No import circles in the packages built on the kernel (type imports included): a module never
 * reaches itself through relative imports. A circle makes load order matter and keeps a file
 * from being read on its own. (@sluice/core's own graph is checked once its limiter's circles
 * are gone; add it to CHECKED then.)
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, relative, resolve } from 'node:path'

const packages = resolve(__dirname, '../..')
const CHECKED = ['http', 'rules', 'cli', 'express', 'fastify', 'koa', 'fetch', 'hono']

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sources(path)
    return entry.name.endsWith('.ts') ? [path] : []
  })
}

/** The files a module imports or re-exports from: relative ones, types and import() included. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8')
  const specifiers = [
    ...text.matchAll(/(?:import|export)\s[^'"]*?from\s+['"](\.[^'"]+)['"]/g),
    ...text.matchAll(/import\(\s*['"](\.[^'"]+)['"]\s*\)/g),
  ].map((match) => resolve(dirname(file), match[1]))
  return specifiers.flatMap((base) =>
    [`${base}.ts`, join(base, 'index.ts')].filter((path) => existsSync(path)).slice(0, 1),
  )
}

/** One circle per file that can reach itself, as the path back to it (files relative to `root`). */
function circles(root: string, dirs: readonly string[]): string[] {
  const files = dirs.flatMap(sources)
  const graph = new Map(files.map((file) => [file, importsOf(file)]))
  const found: string[] = []
  for (const start of files) {
    const parent = new Map<string, string>()
    const queue = [start]
    while (queue.length > 0) {
      const file = queue.shift()!
      for (const next of graph.get(file) ?? []) {
        if (next === start) {
          const path = [file]
          while (path[0] !== start) path.unshift(parent.get(path[0])!)
          found.push([...path, start].map((f) => relative(root, f)).join(' -> '))
          queue.length = 0
          break
        }
        if (!parent.has(next)) {
          parent.set(next, file)
          queue.push(next)
        }
      }
    }
  }
  return found
}

test('no import circles in the packages on the kernel', () => {
  const dirs = CHECKED.map((name) => join(packages, name, 'src'))
  expect(circles(packages, dirs)).toEqual([])
})

test('a circle through a type import is found', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-cycles-'))
  try {
    writeFileSync(join(dir, 'a.ts'), "import { b } from './b'\nexport const a = b\n")
    writeFileSync(join(dir, 'b.ts'), "import type { A } from './c'\nexport const b = 1 as A\n")
    writeFileSync(join(dir, 'c.ts'), "import { a } from './a'\nexport type A = typeof a\n")
    writeFileSync(join(dir, 'd.ts'), "import { a } from './a'\nexport const d = a\n")
    expect(circles(dir, [dir])).toEqual([
      'a.ts -> b.ts -> c.ts -> a.ts',
      'b.ts -> c.ts -> a.ts -> b.ts',
      'c.ts -> a.ts -> b.ts -> c.ts',
    ])
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
