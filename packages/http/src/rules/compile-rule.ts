/**
 * Owns turning one descriptor into a Rule: the checks the schema cannot make (a limit and
 * `unlimited` together, unique names, burst only where it applies) and the rule's policy.
 */
import {
  DEFAULT_ALGORITHM,
  listNames,
  namesTaking,
  ROWS,
  formatDuration,
  ConfigError,
  type LimitOptions,
  resolvePolicy,
  type Policy,
} from '@sluice/core/web'
import { pathLabel, type Issue } from './issue'
import type { FlatDescriptor } from './flatten'
import { UNIT_MS } from './units'

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

/** What rules of one file share while compiling. */
export interface RuleContext {
  /** Problems found so far; compiling goes on to report them all. */
  readonly issues: Issue[]
  /** Rule names seen, with where: names must be unique. */
  readonly names: Map<string, string>
}

/** The rule a descriptor defines (undefined when it has none, or one of its problems). */
export function compileRule(
  descriptor: FlatDescriptor['descriptor'],
  path: (string | number)[],
  match: readonly { key: string; value?: string }[],
  derivedName: string,
  { issues, names }: RuleContext,
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
    const algorithm = rateLimit.algorithm ?? DEFAULT_ALGORITHM
    if (rateLimit.burst !== undefined && !ROWS[algorithm].takes.includes('burst')) {
      issues.push({
        path: [...path, 'rate_limit', 'burst'],
        message: `\`${here}.rate_limit.burst\` must be unset for '${algorithm}' (burst applies to ${listNames(namesTaking('burst'), '', 'and')}); got ${rateLimit.burst}`,
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
  return rule
}
