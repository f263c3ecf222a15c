import { formatDuration } from '../duration'
import { ConfigError } from '../errors'
import type { LimitOptions } from '../options'
import { resolvePolicy } from '../options'
import { METER_ALGORITHMS, type Policy } from '../policy'
import type { DescriptorConfig, RulesDocument } from './schema'
import { UNIT_MS } from './schema'

/**
 * One entry of a request's descriptor, e.g. `['route', '/login']` or `['user', req.user?.id]`.
 * An entry whose value is undefined matches nothing (and ends a nested match), so a missing user
 * never lands every anonymous client in one shared bucket.
 */
export type DescriptorEntry = readonly [key: string, value: string | undefined]

/** One descriptor of the file that limits or exempts: a rule. */
export interface Rule {
  /** The `name` given, or the Lyft-style path, e.g. `api.route_/login.user`. */
  readonly name: string
  /** Where it is in the file, e.g. `descriptors[0].descriptors[1]`. */
  readonly path: string
  /** The entries it matches, outermost first; no `value` means any value (counted per value). */
  readonly match: readonly { readonly key: string; readonly value?: string }[]
  /** `unlimited: true`: reaching it exempts the request from it (and from its bare-key sibling). */
  readonly unlimited: boolean
  /** `shadow_mode: true`: decide and report, never block. */
  readonly shadow: boolean
  /** The limit as `createLimiter` takes it (undefined when unlimited). */
  readonly limit: Readonly<LimitOptions> | undefined
  /** The limit as stores see it (undefined when unlimited). */
  readonly policy: Policy | undefined
}

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

export interface Issue {
  readonly path: (string | number)[]
  readonly message: string
}

interface Node {
  readonly rule: Rule | undefined
  readonly children: Branches | undefined
}

/** The descriptors of one level, by key: the ones with a value, and the bare-key one. */
type Branches = Map<string, { values: Map<string, Node>; any: Node | undefined }>

/** State keys join entries with `|` and `=`; those (and `\`) are escaped inside keys and values. */
function escapePart(part: string): string {
  return /[|=\\]/.test(part) ? part.replace(/[|=\\]/g, (c) => `\\${c}`) : part
}

export function pathLabel(path: readonly (string | number)[]): string {
  let out = ''
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`
    else out += out === '' ? part : `.${part}`
  }
  return out
}

/** Compiles a schema-valid document, reporting what the schema cannot see (issues, not throws). */
export function compileRules(document: RulesDocument, source: string, issues: Issue[]): RuleSet {
  const rules: Rule[] = []
  const names = new Map<string, string>()

  function compileLevel(
    descriptors: readonly DescriptorConfig[],
    parentPath: (string | number)[],
    parentMatch: readonly { key: string; value?: string }[],
    parentName: string,
  ): Branches {
    const branches: Branches = new Map()
    const seen = new Map<string, string>()
    descriptors.forEach((descriptor, index) => {
      const path = [...parentPath, 'descriptors', index]
      const here = pathLabel(path)
      const { key, value } = descriptor
      const identity = value === undefined ? `key: ${key}` : `key: ${key}, value: ${value}`
      const twin = seen.get(identity)
      if (twin !== undefined) {
        issues.push({ path, message: `\`${here}\` repeats \`${identity}\` of \`${twin}\`` })
        return
      }
      seen.set(identity, here)
      const match = [...parentMatch, value === undefined ? { key } : { key, value }]
      const derived = `${parentName}.${value === undefined ? key : `${key}_${value}`}`
      const rule = compileRule(descriptor, path, match, derived)
      const children =
        descriptor.descriptors === undefined || descriptor.descriptors.length === 0
          ? undefined
          : compileLevel(descriptor.descriptors, path, match, derived)
      if (
        descriptor.rate_limit === undefined &&
        descriptor.unlimited !== true &&
        children === undefined
      ) {
        issues.push({
          path,
          message: `\`${here}\` needs a \`rate_limit\`, \`unlimited: true\` or nested \`descriptors\``,
        })
      }
      let branch = branches.get(key)
      if (branch === undefined) {
        branch = { values: new Map(), any: undefined }
        branches.set(key, branch)
      }
      const node: Node = Object.freeze({ rule, children })
      if (value === undefined) branch.any = node
      else branch.values.set(value, node)
    })
    return branches
  }

  function compileRule(
    descriptor: DescriptorConfig,
    path: (string | number)[],
    match: readonly { key: string; value?: string }[],
    derivedName: string,
  ): Rule | undefined {
    const here = pathLabel(path)
    const { rate_limit: rateLimit, unlimited = false, shadow_mode: shadow = false } = descriptor
    if (rateLimit !== undefined && unlimited) {
      issues.push({
        path: [...path, 'unlimited'],
        message: `\`${here}\` has both \`rate_limit\` and \`unlimited: true\`; keep one`,
      })
      return undefined
    }
    if (shadow && rateLimit === undefined) {
      issues.push({
        path: [...path, 'shadow_mode'],
        message: `\`${here}.shadow_mode\` needs a \`rate_limit\` on the same descriptor`,
      })
    }
    if (descriptor.name !== undefined && rateLimit === undefined && !unlimited) {
      issues.push({
        path: [...path, 'name'],
        message: `\`${here}.name\` needs a \`rate_limit\` or \`unlimited: true\` on the same descriptor`,
      })
    }
    if (rateLimit === undefined && !unlimited) return undefined
    const name = descriptor.name ?? derivedName
    const previous = names.get(name)
    if (previous !== undefined) {
      issues.push({
        path: [...path, 'name'],
        message: `\`${here}\` is named ${JSON.stringify(name)}, as \`${previous}\` already is; rule names must be unique`,
      })
    }
    names.set(name, here)
    let limit: LimitOptions | undefined
    let policy: Policy | undefined
    if (rateLimit !== undefined) {
      const algorithm = rateLimit.algorithm ?? 'sliding-window'
      if (rateLimit.burst !== undefined && !METER_ALGORITHMS.has(algorithm)) {
        issues.push({
          path: [...path, 'rate_limit', 'burst'],
          message: `\`${here}.rate_limit.burst\` must be unset for '${algorithm}' (burst applies to token-bucket, leaky-bucket and gcra); got ${rateLimit.burst}`,
        })
        return undefined
      }
      limit = Object.freeze({
        algorithm,
        limit: rateLimit.requests_per_unit,
        window: formatDuration(UNIT_MS[rateLimit.unit]),
        ...(rateLimit.burst === undefined ? {} : { burst: rateLimit.burst }),
        name,
      })
      try {
        policy = resolvePolicy(limit, `${here}.rate_limit.`)
      } catch (error) {
        if (!(error instanceof ConfigError)) throw error
        // resolvePolicy names its own options; say them as the file does.
        issues.push({
          path: [...path, 'rate_limit', 'requests_per_unit'],
          message: error.message.replace('rate_limit.limit`', 'rate_limit.requests_per_unit`'),
        })
        return undefined
      }
    }
    const rule: Rule = Object.freeze({
      name,
      path: here,
      match: Object.freeze(match.map((entry) => Object.freeze({ ...entry }))),
      unlimited,
      shadow,
      limit,
      policy,
    })
    rules.push(rule)
    return rule
  }

  const root = compileLevel(document.descriptors, [], [], document.domain)
  const domainKey = escapePart(document.domain)

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
    domain: document.domain,
    source,
    rules: Object.freeze(rules),
    match,
  })
}
