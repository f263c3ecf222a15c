/**
 * Owns the test every layer's declared options pass: the known names are the declaration's,
 * which are the options interface's members, each with JSDoc in the source and a line in docs/.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { DeclaredOptions } from '@sluice/core/adapter'

const ROOT = join(__dirname, '..', '..', '..')

function docsText(): string {
  return readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => readFileSync(join(ROOT, 'docs', name), 'utf8'))
    .join('\n')
}

/** The members of `interface name` in `file`, each with whether a JSDoc block comes right before it. */
function members(file: string, name: string): Map<string, boolean> {
  const lines = readFileSync(file, 'utf8').split('\n')
  const start = lines.findIndex((line) => new RegExp(`^export interface ${name}\\b`).test(line))
  if (start < 0) throw new Error(`no interface ${name} in ${file}`)
  const found = new Map<string, boolean>()
  let depth = 0
  for (let i = start; i < lines.length; i++) {
    const line = lines[i]!
    const member = /^ {2}(\w+)\??:/.exec(line)
    if (depth === 1 && member) found.set(member[1]!, lines[i - 1]!.trim().endsWith('*/'))
    // Braces and parentheses open no scope inside these interfaces' comments.
    depth += (line.match(/[{(]/g) ?? []).length - (line.match(/[})]/g) ?? []).length
    if (depth <= 0 && i > start) break
  }
  return found
}

/**
 * Registers the tests of one layer: `interfaces` are the source files and interface names whose
 * members together are the layer's options.
 */
export function testDeclaredOptions(
  declared: DeclaredOptions<object>,
  interfaces: ReadonlyArray<readonly [file: string, iface: string]>,
): void {
  const documented = new Map<string, boolean>()
  for (const [file, iface] of interfaces)
    for (const [name, jsdoc] of members(file, iface)) {
      // A member of a union's variants is documented when one variant documents it.
      documented.set(name, jsdoc || documented.get(name) === true)
    }

  test(`${declared.where}: the known names are the declaration, which is the interface`, () => {
    expect(declared.names).toEqual(Object.keys(declared.table))
    expect([...declared.names].sort()).toEqual([...documented.keys()].sort())
  })

  test(`${declared.where}: every declared option has JSDoc, a doc line and a line in docs/`, () => {
    const docs = docsText()
    const table = declared.table as Readonly<Record<string, { doc: string }>>
    const missing = declared.names.filter(
      (name) =>
        documented.get(name) !== true ||
        !docs.includes(`\`${name}\``) ||
        table[name]!.doc.length === 0,
    )
    expect(missing).toEqual([])
  })
}
