// Each layer's options are declared once: the known names are the declaration's, which are the
// options interface's members, each with JSDoc in the source and a line in docs/.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { DeclaredOptions } from '../src/declared-options'
import { HTTP_OPTIONS } from '../src/http/options'
import { LIMITER_OPTIONS } from '../src/limiter/settings'
import { LIMIT_OPTIONS } from '../src/options'
import { createLimiter } from '@sluice/core'
import { createHttpLimiter } from '@sluice/core/web'

const ROOT = join(__dirname, '..', '..', '..')
const SRC = join(__dirname, '..', 'src')
const DOCS = readdirSync(join(ROOT, 'docs'))
  .filter((name) => name.endsWith('.md'))
  .map((name) => readFileSync(join(ROOT, 'docs', name), 'utf8'))
  .join('\n')

/** The members of `interface name` in `file`, each with whether a JSDoc block comes right before it. */
function members(file: string, name: string): Map<string, boolean> {
  const lines = readFileSync(join(SRC, file), 'utf8').split('\n')
  const start = lines.findIndex((line) => new RegExp(`^export interface ${name}\\b`).test(line))
  expect(start).toBeGreaterThanOrEqual(0)
  const found = new Map<string, boolean>()
  let depth = 0
  for (let i = start; i < lines.length; i++) {
    const line = lines[i]!
    const member = /^ {2}(\w+)\??:/.exec(line)
    if (depth === 1 && member) found.set(member[1]!, lines[i - 1]!.trim().endsWith('*/'))
    // Braces inside comments and strings are rare in these interfaces; none open a scope.
    depth += (line.match(/[{(]/g) ?? []).length - (line.match(/[})]/g) ?? []).length
    if (depth <= 0 && i > start) break
  }
  return found
}

const LAYERS: ReadonlyArray<
  [string, DeclaredOptions<object>, ReadonlyArray<[file: string, iface: string]>]
> = [
  ['a limit', LIMIT_OPTIONS, [['options.ts', 'LimitOptions']]],
  [
    'createLimiter',
    LIMITER_OPTIONS,
    [
      ['options.ts', 'LimitOptions'],
      ['options.ts', 'LimiterOptions'],
    ],
  ],
  ['adapters (rateLimit)', HTTP_OPTIONS, [['http/types.ts', 'HttpLimitOptions']]],
]

describe.each(LAYERS)('%s', (_layer, declared, interfaces) => {
  const documented = new Map<string, boolean>()
  for (const [file, iface] of interfaces)
    for (const [name, jsdoc] of members(file, iface)) documented.set(name, jsdoc)

  test('the known names are the declaration, which is the interface', () => {
    expect(declared.names).toEqual(Object.keys(declared.table))
    expect([...declared.names].sort()).toEqual([...documented.keys()].sort())
  })

  test('every declared option has JSDoc, a doc line and a line in docs/', () => {
    const missing = declared.names.filter(
      (name) =>
        documented.get(name) !== true ||
        !DOCS.includes(`\`${name}\``) ||
        (declared.table as Record<string, { doc: string }>)[name]!.doc.length === 0,
    )
    expect(missing).toEqual([])
  })
})

test('a name not declared is refused, naming it and its value', () => {
  expect(() => createLimiter({ limit: 1, window: 1000, brust: 2 } as never)).toThrow(
    'unknown option `brust` for createLimiter (value 2)',
  )
  expect(() =>
    createHttpLimiter({ limit: 1, lmit: 2 } as never, { framework: 'Test', resetStyle: 'delta' }),
  ).toThrow('unknown option `lmit` for Test rateLimit (value 2)')
})

test('resolve fills in the declared defaults and freezes the result', () => {
  const settings = LIMITER_OPTIONS.resolve({ limit: 1, window: 1000 })
  expect(Object.isFrozen(settings)).toBe(true)
  expect(settings).toMatchObject({
    algorithm: 'sliding-window',
    onStoreError: 'throw',
    shadow: false,
    timeoutMs: 1000,
  })
  expect(() => LIMITER_OPTIONS.resolve({ limit: 1, window: 1000, shadow: 'yes' as never })).toThrow(
    '`shadow` must be a boolean; got "yes"',
  )
})
