/**
 * Owns loading rules: YAML or JSON text or a document, validated, compiled, with every problem
 * located at its file line.
 */
import { isMap, isNode, LineCounter, parseDocument, type Document } from 'yaml'
import type { z } from 'zod'
import { describeValue, checkKnownOptions } from '@sluice/core/adapter'
import {
  checkDescriptorBounds,
  checkTextBounds,
  checkValueBounds,
  DEPTH_RULE,
  MAX_RULES_BYTES,
} from './bounds'
import { compileRules, pathLabel, type Issue, type RuleSet, shownKey } from '@sluice/http'
import { RulesError, type RulesIssue } from './errors'
import { readBoundedText, UnreadableFile } from './bounded-read'
import { rulesSchema, type RulesDocument } from './schema'
import { documentValue } from './yaml-value'

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

/** Most unknown keys named in one message; the rest are counted. */
const MAX_KEYS_SHOWN = 5
/** Longest value shown in a message: errors must not copy a file out. */
const MAX_VALUE_SHOWN = 60
/** Most problems reported for one file; the rest are counted. */
const MAX_ISSUES_SHOWN = 20

/** A value for a message, cut short when long. */
function shownValue(value: unknown): string {
  const text = describeValue(value)
  return text.length > MAX_VALUE_SHOWN ? `${text.slice(0, MAX_VALUE_SHOWN)}...` : text
}

/** One zod issue in the message format of every Sluice option error. */
function describeIssue(issue: z.core.$ZodIssue, input: unknown): Issue {
  const path = issue.path.filter((p): p is string | number => typeof p !== 'symbol')
  const here = pathLabel(path)
  if (issue.code === 'unrecognized_keys') {
    const named = issue.keys.slice(0, MAX_KEYS_SHOWN).map((k) => `\`${shownKey(k)}\``)
    const more = issue.keys.length - named.length
    const keys = more > 0 ? `${named.join(', ')} and ${more} more` : named.join(', ')
    const where = here === '' ? 'at the top level' : `in \`${here}\``
    return { path, message: `unknown key${issue.keys.length > 1 ? 's' : ''} ${keys} ${where}` }
  }
  const subject = here === '' ? 'the rules' : `\`${here}\``
  const { found, value } = valueAt(input, path)
  if (!found) return { path, message: `${subject} is missing (must be ${issue.message})` }
  return { path, message: `${subject} must be ${issue.message}; got ${shownValue(value)}` }
}

/** What a value is, without its content: for a document that is not rules at all. */
function kindOf(value: unknown): string {
  if (value === null || value === undefined) return 'nothing'
  if (Array.isArray(value)) return `a list of ${value.length}`
  if (typeof value === 'object') return `a mapping of ${Object.keys(value).length} keys`
  return `a ${typeof value}`
}

/**
 * Refuses, in one line and naming none of its content, a document that is not a rules file at
 * all (a mapping without `domain` and `descriptors`, or no mapping): e.g. a file given by mistake.
 */
function checkIsRules(input: unknown): Issue | undefined {
  if (
    input !== null &&
    typeof input === 'object' &&
    !Array.isArray(input) &&
    ('domain' in input || 'descriptors' in input)
  ) {
    return undefined
  }
  return {
    path: [],
    message: `not a rules file: the rules must be a mapping with \`domain\` and \`descriptors\`; got ${kindOf(input)}`,
  }
}

/** One problem as a RulesError: the problems that stop a file before it can be checked further. */
function refuse(source: string, issue: Issue, line: number | undefined): RulesError {
  return new RulesError(source, [{ path: pathLabel(issue.path), line, message: issue.message }])
}

/** A document that passed every check, and its compiled rules. */
interface Checked {
  readonly document: RulesDocument
  readonly rules: RuleSet
}

/** At most MAX_ISSUES_SHOWN problems, and a last line counting the others. */
function shortened(issues: RulesIssue[]): RulesIssue[] {
  if (issues.length <= MAX_ISSUES_SHOWN) return issues
  const rest = issues.length - MAX_ISSUES_SHOWN
  return [
    ...issues.slice(0, MAX_ISSUES_SHOWN),
    { path: '', line: undefined, message: `and ${rest} more problem${rest > 1 ? 's' : ''}` },
  ]
}

/** Validates and compiles a parsed document; every problem is collected before throwing. */
function build(
  input: unknown,
  source: string,
  lineOfIssue: (issue: Issue, unknownKey?: string) => number | undefined,
): Checked {
  const early = checkValueBounds(input) ?? checkIsRules(input)
  if (early !== undefined) throw refuse(source, early, lineOfIssue(early))
  const parsed = rulesSchema().safeParse(input)
  let issues: Issue[]
  let unknownKeys: (string | undefined)[] = []
  let rules: RuleSet | undefined
  let document: RulesDocument | undefined
  if (parsed.success) {
    document = parsed.data
    const tooMany = checkDescriptorBounds(parsed.data.descriptors)
    if (tooMany !== undefined) throw refuse(source, tooMany, lineOfIssue(tooMany))
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
    throw new RulesError(source, shortened(found))
  }
  return { document, rules }
}

/** Parses YAML (or JSON, which YAML 1.2 reads as well) and compiles it; throws a RulesError. */
export function parseRules(text: string, options: LoadRulesOptions = {}): RuleSet {
  checkKnownOptions(options, ['source'], 'parseRules')
  return checkRulesText(text, options.source ?? OBJECT_SOURCE).rules
}

/** parseRules, keeping the validated document too (a reload worker sends it on). */
export function checkRulesText(text: string, source: string): Checked {
  const tooLarge = checkTextBounds(text)
  if (tooLarge !== undefined) throw refuse(source, tooLarge, undefined)
  const lines = new LineCounter()
  let document: Document
  try {
    document = parseDocument(text, { lineCounter: lines, prettyErrors: false })
  } catch (error) {
    // yaml reports its own errors in document.errors; this is the stack, on a deeply nested file.
    throw new RulesError(
      source,
      [{ path: '', line: undefined, message: syntaxMessage(String(error)) }],
      { cause: error },
    )
  }
  if (document.errors.length > 0) {
    throw new RulesError(
      source,
      shortened(
        document.errors.map((error) => ({
          path: '',
          line: lines.linePos(error.pos[0]).line,
          message: syntaxMessage(error.message),
        })),
      ),
    )
  }
  const lineOfPath = (issue: Issue): number | undefined => lineOf(document, lines, issue.path)
  const converted = documentValue(document)
  if ('issue' in converted) throw refuse(source, converted.issue, lineOfPath(converted.issue))
  return build(converted.value, source, (issue, unknownKey) =>
    unknownKey === undefined
      ? lineOfPath(issue)
      : lineOfKey(document, lines, issue.path, unknownKey),
  )
}

/** A YAML syntax error as a message: its first line, without yaml's position, cut short. */
function syntaxMessage(message: string): string {
  // The parser recurses once per level of nesting; a file that nests past the stack says so.
  if (message.includes('Maximum call stack size exceeded')) {
    return `not valid YAML or JSON: the file nests too deeply; ${DEPTH_RULE}`
  }
  const first = message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '')
  return `not valid YAML or JSON: ${first.length > 120 ? `${first.slice(0, 120)}...` : first}`
}

/**
 * Reads a rules file synchronously, within the bounds (a regular file of at most 8 MiB); an
 * unreadable file is a RulesError like any other problem.
 */
export function readRulesText(file: string, source: string = file): string {
  try {
    return readBoundedText(file, MAX_RULES_BYTES)
  } catch (error) {
    const reason = error instanceof UnreadableFile ? error.reason : String(error)
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
  checkKnownOptions(options, ['source'], 'loadRules')
  if (typeof fileOrObject === 'string') {
    const source = options.source ?? fileOrObject
    return parseRules(readRulesText(fileOrObject, source), { source })
  }
  return build(fileOrObject, options.source ?? OBJECT_SOURCE, () => undefined).rules
}
