/**
 * Owns the compiled form of a rules file: the rule tree a request's descriptor walks, built from
 * flat descriptors in one go or in slices (createRuleSetBuilder), and the walk itself (match).
 */
import type { Policy } from '@sluice/core/web'
import { compileRule, type Rule, type RuleContext } from './compile-rule'
import { pathLabel, type Issue } from './issue'
import { flattenDescriptors, type FlatDescriptor } from './flatten'
import type { RulesDocument } from './document'

export type { Rule } from './compile-rule'

/**
 * One entry of a request's descriptor, e.g. `['route', '/login']` or `['user', req.user?.id]`.
 * An entry whose value is undefined matches nothing (and ends a nested match), so a missing user
 * never lands every anonymous client in one shared bucket.
 */
export type DescriptorEntry = readonly [key: string, value: string | undefined]

/** A rule a request reached, with the state key it counts under. */
export interface MatchedRule {
  readonly rule: Rule
  readonly policy: Policy
  /**
   * Where the count lives: the domain and the request's entries along the rule's path, e.g.
   * `api|user=42`. A per-user rule thus counts per user across routes; a nested route+user rule
   * per user on that route.
   */
  readonly key: string
  /** Same as `rule.shadow`. */
  readonly shadow: boolean
}

/** A loaded, validated and compiled rules file. Immutable: a reload builds a new one. */
export interface RuleSet {
  readonly domain: string
  /** The file it came from (or the label of an object passed to `loadRules`). */
  readonly source: string
  /** Every rule, in file order (depth first). */
  readonly rules: readonly Rule[]
  /**
   * The limiting rules a request reaches, the way Lyft's ratelimit service walks its tree: a
   * walk starts at every entry, and each step follows the descriptor with the entry's key and
   * value, else the one with the key alone (the most specific wins); nested descriptors match the
   * entries that follow, in order. Unlimited rules end in no match. Cost: a few map lookups per
   * entry, and the key strings of the matches.
   */
  match(entries: readonly DescriptorEntry[]): MatchedRule[]
}

interface Node {
  readonly rule: Rule | undefined
  readonly children: Branches | undefined
}

/** The descriptors of one level, by key: the ones with a value, and the bare-key one. */
type Branches = Map<string, { values: Map<string, Node>; any: Node | undefined }>

/** What a state key's part may need escaped: the joiners, `\`, and halves of UTF-16 pairs. */
const SPECIAL = /[|=\\\uD800-\uDFFF]/
/** Half a UTF-16 pair with no other half beside it. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g

/**
 * State keys join entries with `|` and `=`; those (and `\`) are escaped inside keys and values,
 * and a lone half of a UTF-16 pair is written `\u` and its hex digits: a store that writes
 * UTF-8 (Redis, memcached, Postgres) would turn each into U+FFFD and fold the keys together.
 */
function escapePart(part: string): string {
  if (!SPECIAL.test(part)) return part
  return part
    .replace(/[|=\\]/g, (c) => `\\${c}`)
    .replace(LONE_SURROGATE, (half) => `\\u${half.charCodeAt(0).toString(16)}`)
}

/** A descriptor being compiled: its place in the tree and the children compiled so far. */
interface Frame {
  readonly path: (string | number)[]
  readonly match: readonly { key: string; value?: string }[]
  /** The Lyft-style name its children's names extend. */
  readonly name: string
  readonly branches: Branches
  /** Identities of the children seen so far (`key: k, value: v`), to report twins. */
  readonly seen: Map<string, string>
  children: number
  /** A repeated descriptor: reported once; it and its children are left out. */
  readonly skipped: boolean
  readonly own?: {
    readonly descriptor: FlatDescriptor['descriptor']
    readonly rule: Rule | undefined
  }
}

/** Builds a RuleSet from flat descriptors fed in file order, in as many slices as wanted. */
export interface RuleSetBuilder {
  add(records: readonly FlatDescriptor[]): void
  /** The compiled set; call once, after the last `add`, and only when `issues` stayed empty. */
  finish(): RuleSet
}

/**
 * Compiles schema-valid descriptors, reporting what the schema cannot see into `issues` (never
 * throws for them). The tree is kept as a stack of open descriptors, so the records may arrive in
 * slices: a reload compiles a large file a few hundred descriptors per event-loop turn.
 */
export function createRuleSetBuilder(
  domain: string,
  source: string,
  issues: Issue[],
): RuleSetBuilder {
  const rules: Rule[] = []
  const context: RuleContext = { issues, names: new Map() }
  const root: Frame = {
    path: [],
    match: [],
    name: domain,
    branches: new Map(),
    seen: new Map(),
    children: 0,
    skipped: false,
  }
  const stack: Frame[] = [root]

  function open({ depth, descriptor }: FlatDescriptor): void {
    while (stack.length > depth + 1) close()
    const parent = stack[stack.length - 1]
    const path = [...parent.path, 'descriptors', parent.children++]
    const skippedFrame = { ...root, path, branches: new Map(), seen: new Map(), skipped: true }
    if (parent.skipped) {
      stack.push(skippedFrame)
      return
    }
    const here = pathLabel(path)
    const { key, value } = descriptor
    const identity = value === undefined ? `key: ${key}` : `key: ${key}, value: ${value}`
    const twin = parent.seen.get(identity)
    if (twin !== undefined) {
      issues.push({ path, message: `\`${here}\` repeats \`${identity}\` of \`${twin}\`` })
      stack.push(skippedFrame)
      return
    }
    parent.seen.set(identity, here)
    const match = [...parent.match, value === undefined ? { key } : { key, value }]
    const name = `${parent.name}.${value === undefined ? key : `${key}_${value}`}`
    const rule = compileRule(descriptor, path, match, name, context)
    if (rule !== undefined) rules.push(rule)
    stack.push({
      path,
      match,
      name,
      branches: new Map(),
      seen: new Map(),
      children: 0,
      skipped: false,
      own: { descriptor, rule },
    })
  }

  /** Ends the innermost open descriptor: all its children are in, so its node can be built. */
  function close(): void {
    const frame = stack.pop() as Frame
    if (frame.skipped || frame.own === undefined) return
    const { descriptor, rule } = frame.own
    if (
      descriptor.rate_limit === undefined &&
      descriptor.unlimited !== true &&
      !descriptor.hasChildren
    ) {
      issues.push({
        path: frame.path,
        message: `\`${pathLabel(frame.path)}\` needs a \`rate_limit\`, \`unlimited: true\` or nested \`descriptors\``,
      })
    }
    const parent = stack[stack.length - 1]
    let branch = parent.branches.get(descriptor.key)
    if (branch === undefined) {
      branch = { values: new Map(), any: undefined }
      parent.branches.set(descriptor.key, branch)
    }
    const children = frame.branches.size === 0 ? undefined : frame.branches
    const node: Node = Object.freeze({ rule, children })
    if (descriptor.value === undefined) branch.any = node
    else branch.values.set(descriptor.value, node)
  }

  return {
    add(records) {
      for (const record of records) open(record)
    },
    finish() {
      while (stack.length > 1) close()
      return matcher(domain, source, rules, root.branches)
    },
  }
}

/** Compiles a whole schema-valid document at once (see createRuleSetBuilder). */
export function compileRules(document: RulesDocument, source: string, issues: Issue[]): RuleSet {
  const builder = createRuleSetBuilder(document.domain, source, issues)
  builder.add(flattenDescriptors(document.descriptors))
  return builder.finish()
}

/** The RuleSet over a compiled tree: Lyft's walk, described on `RuleSet.match`. */
function matcher(domain: string, source: string, rules: readonly Rule[], root: Branches): RuleSet {
  const domainKey = escapePart(domain)

  function match(entries: readonly DescriptorEntry[]): MatchedRule[] {
    const matched: MatchedRule[] = []
    for (let start = 0; start < entries.length; start++) {
      let level: Branches | undefined = root
      let key = domainKey
      for (let i = start; i < entries.length && level !== undefined; i++) {
        const entry = entries[i]
        const value = entry[1]
        if (typeof value !== 'string') break
        const branch: { values: Map<string, Node>; any: Node | undefined } | undefined = level.get(
          entry[0],
        )
        if (branch === undefined) break
        const node: Node | undefined = branch.values.get(value) ?? branch.any
        if (node === undefined) break
        key += `|${escapePart(entry[0])}=${escapePart(value)}`
        const rule = node.rule
        if (rule !== undefined && rule.policy !== undefined) {
          matched.push({ rule, policy: rule.policy, key, shadow: rule.shadow })
        }
        level = node.children
      }
    }
    return matched
  }

  return Object.freeze({
    domain,
    source,
    rules: Object.freeze(rules),
    match,
  })
}

export { pathLabel, type Issue } from './issue'
