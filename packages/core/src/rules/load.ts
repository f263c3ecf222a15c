/**
 * Owns loading rules: YAML or JSON text or a document, validated, compiled, with every problem
 * located at its file line.
 */
import { readFileSync } from 'node:fs'
import { isMap, isNode, LineCounter, parseDocument, type Document } from 'yaml'
import type { z } from 'zod'
import { describeValue } from '../errors'
import { compileRules, pathLabel, type Issue, type RuleSet } from './compile'
import { RulesError, type RulesIssue } from './errors'
import { rulesSchema, type RulesDocument } from './schema'

/** Label of rules passed as an object, in error messages and `RuleSet.source`. */
const OBJECT_SOURCE = '<rules object>'

export interface LoadRulesOptions {
  /**
   * Names the rules in errors and in `RuleSet.source`.
   * @default the file path, or '<rules object>'
   */
  source?: string
}

/** Where `path` is in the document, for error messages: the closest node that exists. */
function lineOf(
  document: Document,
  lines: LineCounter,
  path: readonly (string | number)[],
): number | undefined {
  for (let depth = path.length; depth >= 0; depth--) {
    const node = document.getIn(path.slice(0, depth), true)
    if (isNode(node) && node.range) return lines.linePos(node.range[0]).line
  }
  return undefined
}

/** Line of key `name` inside the mapping at `path` (an unknown key is best shown where it is). */
function lineOfKey(
  document: Document,
  lines: LineCounter,
  path: readonly (string | number)[],
  name: string,
): number | undefined {
  const node = path.length === 0 ? document.contents : document.getIn(path, true)
  if (isMap(node)) {
    for (const pair of node.items) {
      if (isNode(pair.key) && pair.key.toJSON() === name && pair.key.range) {
        return lines.linePos(pair.key.range[0]).line
      }
    }
  }
  return lineOf(document, lines, path)
}

function valueAt(input: unknown, path: readonly PropertyKey[]): { found: boolean; value: unknown } {
  let value = input
  for (const part of path) {
    if (value === null || typeof value !== 'object' || !(part in value)) {
      return { found: false, value: undefined }
    }
    value = (value as Record<PropertyKey, unknown>)[part]
  }
  return { found: true, value }
}

/** One zod issue in the message format of every Sluice option error. */
function describeIssue(issue: z.core.$ZodIssue, input: unknown): Issue {
  const path = issue.path.filter((p): p is string | number => typeof p !== 'symbol')
  const here = pathLabel(path)
  if (issue.code === 'unrecognized_keys') {
    const keys = issue.keys.map((k) => `\`${k}\``).join(', ')
    const where = here === '' ? 'at the top level' : `in \`${here}\``
    return { path, message: `unknown key${issue.keys.length > 1 ? 's' : ''} ${keys} ${where}` }
  }
  const subject = here === '' ? 'the rules' : `\`${here}\``
  const { found, value } = valueAt(input, path)
  if (!found) return { path, message: `${subject} is missing (must be ${issue.message})` }
  return { path, message: `${subject} must be ${issue.message}; got ${describeValue(value)}` }
}

/** A document that passed every check, and its compiled rules. */
interface Checked {
  readonly document: RulesDocument
  readonly rules: RuleSet
}

/** Validates and compiles a parsed document; every problem is collected before throwing. */
function build(
  input: unknown,
  source: string,
  lineOfIssue: (issue: Issue, unknownKey?: string) => number | undefined,
): Checked {
  const parsed = rulesSchema().safeParse(input)
  let issues: Issue[]
  let unknownKeys: (string | undefined)[] = []
  let rules: RuleSet | undefined
  let document: RulesDocument | undefined
  if (parsed.success) {
    document = parsed.data
    issues = []
    rules = compileRules(parsed.data, source, issues)
  } else {
    // zod reports a failed number twice (not an integer, below 1): one message per path is enough.
    const seen = new Set<string>()
    const raw = parsed.error.issues.filter((issue) => {
      const id = `${issue.code === 'unrecognized_keys' ? 'keys:' : ''}${issue.path.join('.')}`
      if (seen.has(id)) return false
      seen.add(id)
      return true
    })
    issues = raw.map((issue) => describeIssue(issue, input))
    unknownKeys = raw.map((issue) =>
      issue.code === 'unrecognized_keys' ? issue.keys[0] : undefined,
    )
  }
  if (issues.length > 0 || rules === undefined || document === undefined) {
    const found: RulesIssue[] = issues.map((issue, i) => ({
      path: pathLabel(issue.path),
      line: lineOfIssue(issue, unknownKeys[i]),
      message: issue.message,
    }))
    // In file order, so the messages read top to bottom like the file (stable for equal lines).
    found.sort((a, b) => (a.line ?? Infinity) - (b.line ?? Infinity))
    throw new RulesError(source, found)
  }
  return { document, rules }
}

/** Parses YAML (or JSON, which YAML 1.2 reads as well) and compiles it; throws a RulesError. */
export function parseRules(text: string, options: LoadRulesOptions = {}): RuleSet {
  return checkRulesText(text, options.source ?? OBJECT_SOURCE).rules
}

/** parseRules, keeping the validated document too (a reload worker sends it on). */
export function checkRulesText(text: string, source: string): Checked {
  const lines = new LineCounter()
  const document = parseDocument(text, { lineCounter: lines, prettyErrors: false })
  if (document.errors.length > 0) {
    throw new RulesError(
      source,
      document.errors.map((error) => ({
        path: '',
        line: lines.linePos(error.pos[0]).line,
        message: `not valid YAML or JSON: ${error.message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '')}`,
      })),
    )
  }
  const input: unknown = document.toJS()
  return build(input, source, (issue, unknownKey) =>
    unknownKey === undefined
      ? lineOf(document, lines, issue.path)
      : lineOfKey(document, lines, issue.path, unknownKey),
  )
}

/** Reads a rules file synchronously; an unreadable file is a RulesError like any other problem. */
export function readRulesText(file: string, source: string = file): string {
  try {
    return readFileSync(file, 'utf8')
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? String(error)
    throw new RulesError(
      source,
      [{ path: '', line: undefined, message: `cannot be read (${reason})` }],
      { cause: error },
    )
  }
}

/**
 * Loads rules in the descriptor shape of Lyft's ratelimit service, validates them (unknown keys
 * are errors) and compiles them for matching. `fileOrObject` is a path to a YAML or JSON file, or
 * the document itself. Throws a RulesError naming the file, the path inside it and what is wrong.
 * Reads the file synchronously: it is meant for start-up (`watchRules` reloads asynchronously).
 */
export function loadRules(
  fileOrObject: string | RulesDocument,
  options: LoadRulesOptions = {},
): RuleSet {
  if (typeof fileOrObject === 'string') {
    const source = options.source ?? fileOrObject
    return parseRules(readRulesText(fileOrObject, source), { source })
  }
  return build(fileOrObject, options.source ?? OBJECT_SOURCE, () => undefined).rules
}
