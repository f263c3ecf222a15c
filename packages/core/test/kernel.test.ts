/**
 * @sluice/core is the limiter kernel: an application that only limits calls installs and loads
 * nothing of HTTP, rules files or the CLI. Its manifest names no yaml, zod or ipaddr.js, and no
 * source of it imports them, a Node worker, or the packages built on it.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

const core = join(__dirname, '..')
const LEFT = ['yaml', 'zod', 'ipaddr.js', '@sluice/http', '@sluice/rules', '@sluice/cli']

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sources(path)
    return entry.name.endsWith('.ts') ? [path] : []
  })
}

test("core's manifest depends on none of what left it", () => {
  const manifest = JSON.parse(readFileSync(join(core, 'package.json'), 'utf8')) as Record<
    string,
    Record<string, string> | undefined
  >
  const named = ['dependencies', 'peerDependencies', 'optionalDependencies'].flatMap((field) =>
    Object.keys(manifest[field] ?? {}),
  )
  expect(named.filter((name) => LEFT.includes(name))).toEqual([])
  expect(Object.keys(manifest.dependencies ?? {})).toEqual(['@noble/hashes'])
  expect(manifest.bin).toBeUndefined()
})

test('no source of core imports them, nor a worker thread (types included)', () => {
  const offending = sources(join(core, 'src')).flatMap((file) => {
    const text = readFileSync(file, 'utf8')
    const specifiers = [...text.matchAll(/(?:from\s+|import\(\s*|require\(\s*)['"]([^'"]+)['"]/g)]
    return specifiers
      .map((match) => match[1])
      .filter((spec) => LEFT.includes(spec) || spec === 'node:worker_threads')
      .map((spec) => `${file}: ${spec}`)
  })
  expect(offending).toEqual([])
})

test('the built entries load none of them (npm test builds first)', () => {
  const dist = join(core, 'dist')
  const built = readdirSync(dist).filter((name) => /\.(js|mjs|d\.ts|d\.mts)$/.test(name))
  expect(built.length).toBeGreaterThan(0)
  const offending = built.filter((name) =>
    LEFT.some(
      (spec) =>
        readFileSync(join(dist, name), 'utf8').includes(`'${spec}'`) ||
        readFileSync(join(dist, name), 'utf8').includes(`"${spec}"`),
    ),
  )
  expect(offending).toEqual([])
})
