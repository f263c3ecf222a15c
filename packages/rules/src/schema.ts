/**
 * Owns the zod schema of a rules document (its shape is @sluice/http's rules/document.ts), built
 * on first use.
 */
import { createRequire } from 'node:module'
import type { z as Zod } from 'zod'
import { type AlgorithmName, ALGORITHMS } from '@sluice/core'
import { type DescriptorConfig, type RulesDocument, UNIT_MS, type RuleUnit } from '@sluice/http'

export { UNIT_MS, type RuleUnit } from '@sluice/http'
export type { RulesDocument, DescriptorConfig, RateLimitConfig } from '@sluice/http'

const UNITS = Object.keys(UNIT_MS) as [RuleUnit, ...RuleUnit[]]

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
