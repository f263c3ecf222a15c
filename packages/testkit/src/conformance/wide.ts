/**
 * Owns the wide traces: limits whose limit x window passes 2^50 (10^12 tokens a month), which
 * core decides with BigInt arithmetic (isWide), decided by every store exactly as core's
 * transitions, alone and beside a narrow limit.
 */
import { isWide, resolvePolicy, ROWS } from '@sluice/core/adapter'
import type { AlgorithmName, LimitOptions, Policy } from '@sluice/core'
import fc from 'fast-check'
import type { ConformanceContext } from './context'
import { stepArbitrary, type Step } from './model'
import { replay } from './traces'

const DAY = 86_400_000

/** Windows of a month, a day and a prime number of ms (precision 1 there). */
const WINDOWS = [31 * DAY, DAY, 999_983]

/**
 * A limit of `small` units of `unit` cost units, less a little, so that costs which are whole
 * units leave remainders; burst likewise.
 */
function wideLimit(
  algorithm: AlgorithmName,
  unit: number,
  windows: readonly number[] = WINDOWS,
): fc.Arbitrary<LimitOptions> {
  // Each option the algorithm takes (the registry's `takes`), and no other.
  const takes: readonly string[] = ROWS[algorithm].takes
  return fc
    .record({
      small: fc.integer({ min: 1, max: 8 }),
      burst: fc.integer({ min: 1, max: 8 }),
      extra: fc.constantFrom(0, 1, 999),
      window: fc.constantFrom(...windows),
      precision: fc.integer({ min: 1, max: 4 }),
      anchor: fc.constantFrom('clock' as const, 'first-request' as const),
    })
    .map(({ small, burst, extra, window, precision, anchor }) => {
      const options: LimitOptions = { algorithm, limit: small * unit - extra, window }
      if (takes.includes('precision')) {
        return window === 999_983 ? options : { ...options, precision }
      }
      if (takes.includes('anchor')) return { ...options, anchor }
      return takes.includes('burst') ? { ...options, burst: burst * unit - extra } : options
    })
}

/**
 * The conformance steps with costs in units of `unit` (less a share of one, so most are not
 * whole units) and times in ticks of `tick` ms, so a trace spans its windows.
 */
function wideSteps(
  unit: number,
  tick: number,
  extra: ConformanceContext['extraSteps'],
): fc.Arbitrary<Step[]> {
  return fc
    .array(fc.tuple(stepArbitrary(3000, extra), fc.integer({ min: 0, max: 1000 })), {
      minLength: 1,
      maxLength: 30,
    })
    .map((pairs) =>
      pairs.map(([step, share]): Step => {
        const dt = step.dt * tick
        const cost = (c: number): number =>
          c > 0 ? Math.max(1, c * unit - Math.floor((unit * share) / 1000)) : c
        if (step.op === 'wait') {
          return { ...step, dt, cost: cost(step.cost), maxDelayMs: step.maxDelayMs * tick }
        }
        if (step.op === 'reset') return { ...step, dt }
        return { ...step, dt, cost: cost(step.cost) }
      }),
    )
}

const UNITS = [100_000_000_000, 123_456_789_011, 2 ** 47]

/**
 * A unit of a third of 2^52 backlog units over a month: a few costs take a month's wide
 * backlog past 2^52, where the stores' scripts leave plain numbers for limbs, and a drain
 * brings it back.
 */
const NARROW_UNIT = Math.floor(2 ** 52 / (3 * WINDOWS[0]!))

export function registerWideCases(ctx: ConformanceContext): void {
  const { supported, multiple, extraSteps, traceRuns } = ctx
  // A log keeps one entry per unit: no wide budget fits it (core refuses one).
  const algorithms = supported.filter((a) => ROWS[a].family !== 'log')
  /**
   * Traces of one wide limit of `algorithm`, its costs in `units` and its window among
   * `windows`, in ticks of 1/4000 of the window (a trace spans its windows), equal core's.
   */
  async function assertWideTraces(
    algorithm: AlgorithmName,
    units: readonly number[],
    windows = WINDOWS,
  ): Promise<void> {
    const trace = fc.constantFrom(...units).chain((unit) =>
      wideLimit(algorithm, unit, windows).chain((limit) =>
        fc.record({
          limit: fc.constant(limit),
          start: fc.integer({ min: 0, max: 10_000_000 }),
          steps: wideSteps(unit, Math.floor(Number(limit.window) / 4000), extraSteps),
        }),
      ),
    )
    await fc.assert(
      fc.asyncProperty(trace, async ({ limit, start, steps }) => {
        const policy = resolvePolicy(limit)
        expect(isWide(policy)).toBe(true)
        await replay(ctx, [policy], start, steps)
      }),
      { numRuns: Math.ceil(traceRuns / 2) },
    )
  }

  for (const algorithm of algorithms) {
    test(`wide traces (limit x window past 2^50) equal core's transitions (${algorithm})`, () =>
      assertWideTraces(algorithm, UNITS))
    // A month's limit drains up to most of its backlog within a trace: back below 2^52.
    test(`wide traces across 2^52 of backlog equal core's transitions (${algorithm})`, () =>
      assertWideTraces(algorithm, [NARROW_UNIT], [WINDOWS[0]!]))
  }

  if (multiple && algorithms.length > 0) {
    // Tokens per minute (narrow) and per month (wide) on one key: the LLM gateway's pair.
    test('a narrow and a wide limit together equal core', async () => {
      const unit = 1_000_000_000
      const pair = fc.record({
        minute: fc
          .constantFrom(...algorithms)
          .chain((a) => fc.integer({ min: 2, max: 8 }).map((n) => ({ a, n }))),
        month: fc
          .constantFrom(...algorithms)
          .chain((a) => fc.integer({ min: 4, max: 20 }).map((n) => ({ a, n }))),
      })
      await fc.assert(
        fc.asyncProperty(
          pair,
          fc.integer({ min: 0, max: 10_000_000 }),
          wideSteps(unit, 20, extraSteps),
          async ({ minute, month }, start, steps) => {
            const policies: Policy[] = [
              resolvePolicy({
                algorithm: minute.a,
                limit: minute.n * unit,
                window: '1m',
                name: 'minute',
              }),
              resolvePolicy({
                algorithm: month.a,
                limit: month.n * unit,
                window: '31d',
                name: 'month',
              }),
            ]
            expect(policies.map(isWide)).toEqual([false, true])
            await replay(ctx, policies, start, steps)
          },
        ),
        { numRuns: traceRuns },
      )
    })
  }
}
