/**
 * Owns the rules document's shape (Lyft ratelimit descriptors plus Sluice's extensions) and its
 * zod schema, built on first use.
 */
import { createRequire } from 'node:module'
import type { z as Zod } from 'zod'
import type { AlgorithmName } from '../policy'
import { ALGORITHMS } from '../policy'

import { UNIT_MS, type RuleUnit } from './units'

export { UNIT_MS, type RuleUnit } from './units'

const UNITS = Object.keys(UNIT_MS) as [RuleUnit, ...RuleUnit[]]

/** The limit of one descriptor. */
export interface RateLimitConfig {
  /** The window: one `second`, `minute`, `hour` or `day`. */
  unit: RuleUnit
  /** Requests (cost units) allowed per unit; a positive integer. */
  requests_per_unit: number
  /**
   * Sluice extension: the algorithm that counts (see docs/algorithms.md).
   * @default 'sliding-window'
   */
  algorithm?: AlgorithmName
  /**
   * Sluice extension, token-bucket, leaky-bucket and gcra only: requests a rested client may
   * make at once.
   * @default requests_per_unit
   */
  burst?: number
}

/** One node of the descriptor tree: matches one `[key, value]` entry of a request. */
export interface DescriptorConfig {
  /** The entry key this descriptor matches, e.g. `route` or `user`. */
  key: string
  /**
   * Matches only this value. Without it the descriptor matches any value of `key`, and counts
   * each value apart (a per-user limit). A value beats a bare key: the most specific wins.
   * @default undefined (any value)
   */
  value?: string
  /** The limit applied when a request's entries reach this descriptor. */
  rate_limit?: RateLimitConfig
  /**
   * Exempts requests that reach this descriptor from it: with a `value`, it lifts the limit of
   * the bare-key sibling (e.g. an unlimited `user: admin` beside a per-user limit).
   * @default false
   */
  unlimited?: boolean
  /**
   * Decide and report, never block, for this descriptor's `rate_limit`.
   * @default false
   */
  shadow_mode?: boolean
  /**
   * The rule's name in metrics, headers and `sluice check-rules`.
   * @default the Lyft-style path, e.g. 'api.route_/login.user'
   */
  name?: string
  /** Nested descriptors: match the entries that follow this one in the request. */
  descriptors?: DescriptorConfig[]
}

/** A rules file: one domain and its descriptor tree (Lyft ratelimit's configuration shape). */
export interface RulesDocument {
  /** Namespace of the rules; part of every state key, so two domains never share counts. */
  domain: string
  /** The top-level descriptors. */
  descriptors: DescriptorConfig[]
}

let schema: Zod.ZodType<RulesDocument> | undefined

/**
 * The schema of a rules document, built on first use. zod is loaded only then: a server that
 * never loads rules should not pay its start-up time and memory. (Loading it at start-up also
 * made a Fastify hello-world's process.nextTick about tenfold slower on the test machine, most
 * likely by moving the first incremental GC onto V8's first optimisations of Node's HTTP
 * internals; see docs/benchmarks.md.)
 */
export function rulesSchema(): Zod.ZodType<RulesDocument> {
  if (schema !== undefined) return schema
  // createRequire works in the CommonJS and the ESM build alike (tsup shims __filename).
  const { z } = createRequire(__filename)('zod') as typeof import('zod')

  // Each `error` is the expectation; the formatter in load.ts adds the path and the value found.
  const nonEmpty = (what: string) => z.string({ error: what }).min(1, { error: what })
  const positiveInteger = (what: string) =>
    z.number({ error: what }).int({ error: what }).min(1, { error: what })
  const flag = z.boolean({ error: 'true or false' })

  const rateLimitSchema = z.strictObject({
    unit: z.enum(UNITS, { error: `one of ${UNITS.map((u) => `'${u}'`).join(', ')}` }),
    requests_per_unit: positiveInteger('a positive integer'),
    algorithm: z
      .enum(ALGORITHMS as [AlgorithmName, ...AlgorithmName[]], {
        error: `one of ${ALGORITHMS.map((a) => `'${a}'`).join(', ')}`,
      })
      .optional(),
    burst: positiveInteger('a positive integer').optional(),
  })

  const descriptorSchema: Zod.ZodType<DescriptorConfig> = z.strictObject({
    key: nonEmpty('a non-empty string'),
    value: z.string({ error: 'a string (quote numbers: "42")' }).optional(),
    rate_limit: rateLimitSchema.optional(),
    unlimited: flag.optional(),
    shadow_mode: flag.optional(),
    name: nonEmpty('a non-empty string').optional(),
    get descriptors() {
      return z.array(descriptorSchema, { error: 'a list of descriptors' }).optional()
    },
  })

  schema = z.strictObject(
    {
      domain: nonEmpty('a non-empty string'),
      descriptors: z.array(descriptorSchema, { error: 'a list of descriptors' }),
    },
    { error: 'a mapping with `domain` and `descriptors`' },
  )
  return schema
}
