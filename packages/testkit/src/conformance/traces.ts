/**
 * Owns the randomized traces: every store decides as core's pure transitions do, alone, together, and with several limits.
 */
import { type Policy, type PolicyOutcome, type StoreResult } from '@sluice/core'
import { resolvePolicy } from '@sluice/core/adapter'
import fc from 'fast-check'
import type { ConformanceContext } from './context'
import { plain, ReferenceModel, limitArbitrary, stepArbitrary, costs, type Step } from './model'

/** Replays a trace on the store and on the reference model; every outcome must match. */
export async function replay(
  ctx: ConformanceContext,
  policies: Policy[],
  start: number,
  steps: readonly Step[],
): Promise<void> {
  const key = ctx.freshKey()
  const model = new ReferenceModel(policies)
  let now = start
  const admitted: number[] = []
  for (const [index, step] of steps.entries()) {
    now += step.dt
    const where = `step ${index} (${step.op} at ${now})`
    if (step.op === 'consume') {
      const expected = model.consume(now, step.cost)
      const { outcomes } = await ctx.store.consume({ key, policies, cost: step.cost, now })
      expect({ where, outcomes: plain(outcomes) }).toEqual({ where, outcomes: expected })
      if (expected.every((o) => o.allowed)) admitted.push(now)
    } else if (step.op === 'wait') {
      const { cost, maxDelayMs } = step
      const expected = model.consume(now, cost, maxDelayMs)
      const { outcomes } = await ctx.store.consume({ key, policies, cost, now, maxDelayMs })
      expect({ where, maxDelayMs, outcomes: plain(outcomes) }).toEqual({
        where,
        maxDelayMs,
        outcomes: expected,
      })
      if (expected.every((o) => o.allowed)) admitted.push(now)
    } else if (step.op === 'penalize') {
      model.penalize(now, step.cost)
      await ctx.store.penalize({ key, policies, cost: step.cost, now })
    } else if (step.op === 'reward') {
      model.refund(now, step.cost)
      await ctx.store.refund({ key, policies, cost: step.cost, now })
    } else if (step.op === 'peek') {
      const expected = model.peek(now, step.cost)
      const { outcomes } = await ctx.store.peek({ key, policies, cost: step.cost, now })
      expect({ where, outcomes: plain(outcomes) }).toEqual({ where, outcomes: expected })
    } else if (step.op === 'refund') {
      if (!ctx.refunds) continue
      const at = admitted.length > 0 ? admitted[step.pick % admitted.length] : now
      model.refund(now, step.cost, at)
      await ctx.store.refund({ key, policies, cost: step.cost, now, at })
    } else {
      model.reset()
      await ctx.store.reset(key, policies)
    }
  }
}

/** Groups of calls on three keys, each group's made together (not awaited one by one). */
type Together = readonly {
  readonly dt: number
  readonly calls: readonly { readonly key: number; readonly cost: number; readonly dt: number }[]
}[]

/**
 * Makes each group's consumes together, as an HTTP server makes them, and checks each one
 * against the reference model decided alone, in the order made.
 */
async function replayTogether(
  ctx: ConformanceContext,
  policies: Policy[],
  start: number,
  groups: Together,
): Promise<void> {
  const keys = [ctx.freshKey(), ctx.freshKey(), ctx.freshKey()]
  const models = keys.map(() => new ReferenceModel(policies))
  let now = start
  for (const [index, group] of groups.entries()) {
    now += group.dt
    const expected: PolicyOutcome[][] = []
    const made: Promise<StoreResult>[] = []
    for (const call of group.calls) {
      now += call.dt
      expected.push(models[call.key].consume(now, call.cost))
      made.push(ctx.store.consume({ key: keys[call.key], policies, cost: call.cost, now }))
    }
    const outcomes = (await Promise.all(made)).map((r) => plain(r.outcomes))
    expect({ group: index, outcomes }).toEqual({ group: index, outcomes: expected })
  }
}

export function registerTraceCases(ctx: ConformanceContext): void {
  const { supported, multiple, extraSteps, traceRuns, ordered } = ctx
  for (const algorithm of supported) {
    test(`randomized traces equal core's transitions (${algorithm})`, async () => {
      await fc.assert(
        fc.asyncProperty(
          limitArbitrary(algorithm),
          fc.integer({ min: 0, max: 10_000_000 }),
          fc.array(stepArbitrary(3000, extraSteps), { minLength: 1, maxLength: 40 }),
          async (limit, start, steps) => {
            await replay(ctx, [resolvePolicy(limit)], start, steps)
          },
        ),
        { numRuns: traceRuns },
      )
    })
  }

  // Decisions made together, not awaited one by one, as an HTTP server makes them: a store may
  // send them together (RedisStore's batches) but decides each as alone, in the order made.
  const together = fc.array(
    fc.record({
      dt: fc.integer({ min: 0, max: 3000 }),
      calls: fc.array(
        fc.record({
          key: fc.integer({ min: 0, max: 2 }),
          cost: costs,
          // The clock sometimes moves between two calls of one turn.
          dt: fc.oneof({ weight: 4, arbitrary: fc.constant(0) }, fc.integer({ min: 1, max: 9 })),
        }),
        { minLength: 1, maxLength: 40 },
      ),
    }),
    { minLength: 1, maxLength: 4 },
  )
  for (const algorithm of ordered) {
    test(`decisions made together equal core's, in the order made (${algorithm})`, async () => {
      await fc.assert(
        fc.asyncProperty(
          limitArbitrary(algorithm),
          fc.integer({ min: 0, max: 10_000_000 }),
          together,
          async (limit, start, groups) => {
            await replayTogether(ctx, [resolvePolicy(limit)], start, groups)
          },
        ),
        { numRuns: Math.ceil(traceRuns / 3) },
      )
    })
  }

  // Several limits per key, made together: all-or-nothing per decision, in the order made.
  if (multiple && ordered.length > 0) {
    test("decisions with several (mixed) limits made together equal core's", async () => {
      const limits = fc.array(
        fc.constantFrom(...ordered).chain((a) => limitArbitrary(a)),
        { minLength: 2, maxLength: 3 },
      )
      await fc.assert(
        fc.asyncProperty(
          limits,
          fc.integer({ min: 0, max: 10_000_000 }),
          together,
          async (options, start, groups) => {
            const policies = options.map((o, i) => resolvePolicy({ ...o, name: `l${i}` }))
            await replayTogether(ctx, policies, start, groups)
          },
        ),
        { numRuns: Math.ceil(traceRuns / 3) },
      )
    })
  }

  if (multiple && supported.length > 0) {
    test('randomized traces with several (mixed) limits equal core', async () => {
      const algorithm = fc.constantFrom(...supported)
      const limits = fc.array(
        algorithm.chain((a) => limitArbitrary(a)),
        { minLength: 2, maxLength: 3 },
      )
      await fc.assert(
        fc.asyncProperty(
          limits,
          fc.integer({ min: 0, max: 10_000_000 }),
          fc.array(stepArbitrary(3000, extraSteps), { minLength: 1, maxLength: 40 }),
          async (options, start, steps) => {
            // Unique names, as the limiter requires; ids may repeat (then state is shared).
            const policies = options.map((o, i) => resolvePolicy({ ...o, name: `l${i}` }))
            await replay(ctx, policies, start, steps)
          },
        ),
        { numRuns: traceRuns },
      )
    })
  }
}
