/**
 * The store conformance suite: one set of cases every Store runs (MemoryStore, RedisStore,
 * MemcachedStore...). A store's decisions must equal those of core's pure transitions
 * (`algorithms[policy.algorithm]` on a plain array) for the same inputs, step by step, with a
 * fixed clock. Stores that cannot do everything declare it with capability flags; the cases
 * they cannot run are not registered (rather than skipped).
 */
import {
  ALGORITHMS,
  algorithms,
  createLimiter,
  resolvePolicy,
  type AlgorithmName,
  type LimiterOptions,
  type LimitOptions,
  type Policy,
  type PolicyOutcome,
  type Store,
} from '@sluice/core'
import fc from 'fast-check'

export interface StoreUnderTest {
  readonly store: Store
  /** Closes the store and whatever the factory opened for it (clients, servers). */
  close(): Promise<void>
}

export interface StoreCapabilities {
  /**
   * Algorithms the store runs; cases for the others are not registered.
   * @default every algorithm
   */
  readonly algorithms?: readonly AlgorithmName[]
  /**
   * Whether several policies of one key are decided in one atomic call (all-or-nothing).
   * @default true
   */
  readonly multiplePolicies?: boolean
  /**
   * Whether `refund` is implemented.
   * @default true
   */
  readonly refund?: boolean
  /**
   * Randomized traces per case (each a fresh key and a few dozen steps).
   * @default 60
   */
  readonly traceRuns?: number
}

/** The five fields of the contract (stores may return richer objects, e.g. core's Verdict). */
function plain(outcomes: readonly PolicyOutcome[]): PolicyOutcome[] {
  return outcomes.map(({ allowed, remaining, resetMs, retryAfterMs, delayMs }) => ({
    allowed,
    remaining,
    resetMs,
    retryAfterMs,
    delayMs,
  }))
}

/** The empty outcome, filled by `decide`. */
function blankOutcome(): PolicyOutcome {
  return { allowed: false, remaining: 0, resetMs: 0, retryAfterMs: 0, delayMs: 0 }
}

/**
 * The reference: one key's state for each policy as a plain array, driven by core's pure
 * transitions exactly as a store must behave (decide every policy; apply to all only when all
 * admit; refund only state that exists; reset forgets it).
 */
export class ReferenceModel {
  private readonly states = new Map<string, number[]>()

  constructor(private readonly policies: readonly Policy[]) {}

  consume(now: number, cost: number): PolicyOutcome[] {
    const outcomes = this.decide(now, cost)
    if (cost > 0 && outcomes.every((o) => o.allowed)) {
      for (const policy of this.policies) {
        algorithms[policy.algorithm].apply(this.state(policy), 0, now, policy, cost)
      }
    }
    return outcomes
  }

  peek(now: number, cost: number): PolicyOutcome[] {
    return this.decide(now, cost)
  }

  refund(now: number, cost: number, at: number): void {
    for (const policy of this.policies) {
      const state = this.states.get(policy.id)
      if (state !== undefined) algorithms[policy.algorithm].refund(state, 0, now, policy, cost, at)
    }
  }

  reset(): void {
    this.states.clear()
  }

  private decide(now: number, cost: number): PolicyOutcome[] {
    return this.policies.map((policy) => {
      const out = blankOutcome()
      algorithms[policy.algorithm].decide(this.state(policy), 0, now, policy, cost, out)
      return out
    })
  }

  private state(policy: Policy): number[] {
    let state = this.states.get(policy.id)
    if (state === undefined) {
      state = new Array<number>(algorithms[policy.algorithm].slots(policy)).fill(0)
      this.states.set(policy.id, state)
    }
    return state
  }
}

type Step =
  | { readonly op: 'consume'; readonly dt: number; readonly cost: number }
  | { readonly op: 'peek'; readonly dt: number; readonly cost: number }
  | { readonly op: 'refund'; readonly dt: number; readonly cost: number; readonly pick: number }
  | { readonly op: 'reset'; readonly dt: number }

/** A limit small enough that traces reach and leave it often. */
function limitArbitrary(algorithm: AlgorithmName): fc.Arbitrary<LimitOptions> {
  const meter = algorithm === 'token-bucket' || algorithm === 'leaky-bucket' || algorithm === 'gcra'
  return fc
    .record({
      limit: fc.integer({ min: 1, max: 8 }),
      precision: fc.integer({ min: 1, max: 4 }),
      unit: fc.constantFrom(1, 7, 250, 1000, 15_000),
      burst: fc.integer({ min: 1, max: 10 }),
    })
    .map(({ limit, precision, unit, burst }) => {
      const window = unit * (algorithm === 'sliding-window' ? precision : 4)
      const options: LimitOptions = { algorithm, limit, window }
      return algorithm === 'sliding-window'
        ? { ...options, precision }
        : meter
          ? { ...options, burst }
          : options
    })
}

function stepArbitrary(maxDt: number): fc.Arbitrary<Step> {
  const dt = fc.oneof(fc.constant(0), fc.integer({ min: 0, max: maxDt }))
  return fc.oneof(
    { weight: 8, arbitrary: fc.record({ op: fc.constant('consume' as const), dt, cost: costs }) },
    { weight: 2, arbitrary: fc.record({ op: fc.constant('peek' as const), dt, cost: peekCosts }) },
    {
      weight: 2,
      arbitrary: fc.record({
        op: fc.constant('refund' as const),
        dt,
        cost: fc.integer({ min: 1, max: 3 }),
        pick: fc.nat(),
      }),
    },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('reset' as const), dt }) },
  )
}

// Mostly 1 (the common case, and the one a block cache answers), sometimes heavier, sometimes
// more than any capacity in the traces (retryAfterMs Infinity).
const costs = fc.oneof(
  { weight: 6, arbitrary: fc.constant(1) },
  { weight: 3, arbitrary: fc.integer({ min: 2, max: 4 }) },
  { weight: 1, arbitrary: fc.constant(11) },
)
const peekCosts = fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 3 }))

/** Runs `describe` with the conformance cases for one store. */
export function describeStoreConformance(
  name: string,
  factory: () => Promise<StoreUnderTest>,
  capabilities: StoreCapabilities = {},
): void {
  const supported = capabilities.algorithms ?? ALGORITHMS
  const multiple = capabilities.multiplePolicies ?? true
  const refunds = capabilities.refund ?? true
  const traceRuns = capabilities.traceRuns ?? 60
  const meters = supported.filter(
    (a) => a === 'token-bucket' || a === 'leaky-bucket' || a === 'gcra',
  )
  const windowed = supported.filter(
    (a) => a === 'fixed-window' || a === 'sliding-window' || a === 'sliding-log',
  )

  describe(`store conformance: ${name}`, () => {
    let subject: StoreUnderTest
    let store: Store
    let keys = 0
    /** A key no other case (or earlier run on a shared server) has used. */
    const freshKey = (): string =>
      `conf:${process.pid}:${Date.now().toString(36)}:${(keys++).toString(36)}`

    beforeAll(async () => {
      subject = await factory()
      store = subject.store
    })
    afterAll(async () => {
      await subject?.close()
    })

    /** A limiter on the store under test with a clock the case moves by hand. */
    function limiterAt(start: number, options: LimiterOptions) {
      const clock = { now: start }
      const limiter = createLimiter({ ...options, store, clock: () => clock.now })
      return { limiter, clock, key: freshKey() }
    }

    async function burst(
      limiter: ReturnType<typeof createLimiter>,
      key: string,
      n: number,
      cost = 1,
    ) {
      const out = []
      for (let i = 0; i < n; i++) out.push(await limiter.consume(key, { cost }))
      return out
    }

    function policiesOf(...limits: LimitOptions[]): Policy[] {
      return limits.map((limit) => resolvePolicy(limit))
    }

    // ---- DESIGN.md, "Semantics, by example" -------------------------------------------------

    if (supported.includes('fixed-window')) {
      test('DESIGN fixed-window: aligned windows, retry at the next window, the edge burst', async () => {
        const { limiter, clock, key } = limiterAt(10_500, {
          algorithm: 'fixed-window',
          limit: 3,
          window: 1000,
        })
        const decisions = await burst(limiter, key, 4)
        expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false])
        expect(decisions[3].retryAfterMs).toBe(500)
        clock.now = 11_000
        expect((await limiter.consume(key)).allowed).toBe(true)

        const edge = limiterAt(10_999, { algorithm: 'fixed-window', limit: 3, window: 1000 })
        expect((await burst(edge.limiter, edge.key, 3)).every((d) => d.allowed)).toBe(true)
        edge.clock.now = 11_000
        expect((await burst(edge.limiter, edge.key, 3)).every((d) => d.allowed)).toBe(true)
      })
    }

    if (supported.includes('sliding-log')) {
      test('DESIGN sliding-log: exact window, rejected requests not logged', async () => {
        const { limiter, clock, key } = limiterAt(1000, {
          algorithm: 'sliding-log',
          limit: 2,
          window: 60_000,
        })
        expect((await limiter.consume(key)).allowed).toBe(true)
        clock.now = 30_000
        expect((await limiter.consume(key)).allowed).toBe(true)
        clock.now = 50_000
        expect((await limiter.consume(key)).allowed).toBe(false)
        clock.now = 60_500
        const stillFull = await limiter.consume(key)
        expect(stillFull.allowed).toBe(false)
        expect(stillFull.retryAfterMs).toBe(500)
        clock.now = 61_500
        expect((await limiter.consume(key)).allowed).toBe(true)
      })
    }

    if (supported.includes('sliding-window')) {
      test('DESIGN sliding-window: 3 + 5 x 0.7 = 6.5 passes, the next (7.5) is rejected', async () => {
        const { limiter, clock, key } = limiterAt(60_000 * 10 + 1000, {
          algorithm: 'sliding-window',
          limit: 7,
          window: 60_000,
        })
        await burst(limiter, key, 5)
        clock.now = 60_000 * 11 + 1000
        expect((await burst(limiter, key, 3)).every((d) => d.allowed)).toBe(true)
        clock.now = 60_000 * 11 + 18_000
        const seventh = await limiter.consume(key)
        expect(seventh.allowed).toBe(true)
        expect(seventh.remaining).toBe(0)
        expect((await limiter.consume(key)).allowed).toBe(false)
      })
    }

    if (supported.includes('token-bucket')) {
      test('DESIGN token-bucket: four at once, the fifth waits exactly 15000 ms', async () => {
        const { limiter, clock, key } = limiterAt(5_000_000, {
          algorithm: 'token-bucket',
          limit: 4,
          window: 60_000,
        })
        expect((await burst(limiter, key, 4)).every((d) => d.allowed)).toBe(true)
        const fifth = await limiter.consume(key)
        expect(fifth.allowed).toBe(false)
        expect(fifth.retryAfterMs).toBe(15_000)
        clock.now += 14_999
        expect((await limiter.consume(key)).allowed).toBe(false)
        clock.now += 1
        expect((await limiter.consume(key)).allowed).toBe(true)
        expect((await limiter.consume(key)).allowed).toBe(false)
      })
    }

    if (supported.includes('gcra')) {
      test('DESIGN gcra: six at once, the seventh waits 10 ms', async () => {
        const { limiter, clock, key } = limiterAt(777, {
          algorithm: 'gcra',
          limit: 100,
          window: 1000,
          burst: 6,
        })
        expect((await burst(limiter, key, 6)).every((d) => d.allowed)).toBe(true)
        const seventh = await limiter.consume(key)
        expect(seventh.allowed).toBe(false)
        expect(seventh.retryAfterMs).toBe(10)
        clock.now += 10
        expect((await limiter.consume(key)).allowed).toBe(true)
        expect((await limiter.consume(key)).allowed).toBe(false)
      })
    }

    if (supported.includes('leaky-bucket')) {
      test('DESIGN leaky-bucket: delays 0, 500, 1000, then the full queue waits 500', async () => {
        const { limiter, key } = limiterAt(1_000_000, {
          algorithm: 'leaky-bucket',
          limit: 2,
          window: 1000,
          burst: 3,
        })
        const decisions = await burst(limiter, key, 4)
        expect(decisions.slice(0, 3).map((d) => [d.allowed, d.delayMs])).toEqual([
          [true, 0],
          [true, 500],
          [true, 1000],
        ])
        expect(decisions[3].allowed).toBe(false)
        expect(decisions[3].retryAfterMs).toBe(500)
      })
    }

    for (const algorithm of supported) {
      test(`DESIGN cost (${algorithm}): 4 + 4 pass, a third 4 is rejected with remaining 2, then 2 passes`, async () => {
        const { limiter, key } = limiterAt(100_000, { algorithm, limit: 10, window: 60_000 })
        const [a, b, c] = await burst(limiter, key, 3, 4)
        expect([a.allowed, b.allowed, c.allowed]).toEqual([true, true, false])
        expect(c.remaining).toBe(2)
        const d = await limiter.consume(key, { cost: 2 })
        expect(d.allowed).toBe(true)
        expect(d.remaining).toBe(0)
      })
    }

    // ---- Contract cases, for every algorithm ------------------------------------------------

    for (const algorithm of supported) {
      describe(algorithm, () => {
        const now = 1_000_000

        test('a cost above the capacity is rejected forever and writes nothing', async () => {
          const key = freshKey()
          const policies = policiesOf({ algorithm, limit: 3, window: 60_000 })
          await store.consume({ key, policies, cost: 1, now })
          const { outcomes } = await store.consume({ key, policies, cost: 4, now })
          expect(outcomes[0].allowed).toBe(false)
          expect(outcomes[0].retryAfterMs).toBe(Infinity)
          const after = await store.peek({ key, policies, cost: 0, now })
          expect(after.outcomes[0].remaining).toBe(2)
        })

        test('a rejected request writes nothing', async () => {
          const key = freshKey()
          const policies = policiesOf({ algorithm, limit: 2, window: 60_000 })
          await store.consume({ key, policies, cost: 2, now })
          const before = await store.peek({ key, policies, cost: 1, now: now + 1 })
          for (let i = 0; i < 3; i++) {
            const rejected = await store.consume({ key, policies, cost: 1, now: now + 1 })
            expect(rejected.outcomes[0].allowed).toBe(false)
          }
          expect(await store.peek({ key, policies, cost: 1, now: now + 1 })).toEqual(before)
        })

        test('peek changes nothing', async () => {
          const looked = freshKey()
          const fresh = freshKey()
          const policies = policiesOf({ algorithm, limit: 3, window: 60_000 })
          for (let cost = 0; cost < 5; cost++) {
            const { outcomes } = await store.peek({ key: looked, policies, cost, now })
            expect(outcomes[0].allowed).toBe(cost <= 3)
          }
          for (let i = 0; i < 4; i++) {
            const a = await store.consume({ key: looked, policies, cost: 1, now })
            const b = await store.consume({ key: fresh, policies, cost: 1, now })
            expect(a).toEqual(b)
          }
        })

        test('reset forgets the key', async () => {
          const key = freshKey()
          const policies = policiesOf({ algorithm, limit: 2, window: 60_000 })
          await store.consume({ key, policies, cost: 2, now })
          expect((await store.consume({ key, policies, cost: 1, now })).outcomes[0].allowed).toBe(
            false,
          )
          await store.reset(key, policies)
          const { outcomes } = await store.consume({ key, policies, cost: 1, now })
          expect(outcomes[0]).toMatchObject({ allowed: true, remaining: 1 })
        })

        if (refunds) {
          test('refund gives back what consume took', async () => {
            const key = freshKey()
            const policies = policiesOf({ algorithm, limit: 3, window: 60_000 })
            await store.consume({ key, policies, cost: 3, now })
            expect(
              (await store.consume({ key, policies, cost: 1, now: now + 1 })).outcomes[0].allowed,
            ).toBe(false)
            await store.refund({ key, policies, cost: 1, now: now + 1, at: now })
            expect(
              (await store.consume({ key, policies, cost: 1, now: now + 1 })).outcomes[0].allowed,
            ).toBe(true)
            expect(
              (await store.consume({ key, policies, cost: 1, now: now + 1 })).outcomes[0].allowed,
            ).toBe(false)
          })
        }
      })
    }

    if (refunds) {
      for (const algorithm of windowed) {
        test(`refund does not reach into a window that has reset (${algorithm})`, async () => {
          const key = freshKey()
          const policies = policiesOf({ algorithm, limit: 3, window: 1000 })
          await store.consume({ key, policies, cost: 3, now: 10_500 })
          const { outcomes } = await store.consume({ key, policies, cost: 3, now: 12_500 })
          expect(outcomes[0].allowed).toBe(true)
          await store.refund({ key, policies, cost: 3, now: 12_500, at: 10_500 })
          const after = await store.consume({ key, policies, cost: 1, now: 12_500 })
          expect(after.outcomes[0].allowed).toBe(false)
        })
      }
      for (const algorithm of meters) {
        test(`refund never goes below empty (${algorithm})`, async () => {
          const key = freshKey()
          const policies = policiesOf({ algorithm, limit: 3, window: 60_000 })
          await store.consume({ key, policies, cost: 1, now: 5000 })
          await store.refund({ key, policies, cost: 3, now: 5000, at: 5000 })
          const { outcomes } = await store.peek({ key, policies, cost: 0, now: 5000 })
          expect(outcomes[0].remaining).toBe(3)
        })
      }
    }

    // ---- Several limits on one key: all-or-nothing -----------------------------------------

    if (multiple) {
      for (const algorithm of supported) {
        test(`several limits are all-or-nothing (${algorithm})`, async () => {
          const key = freshKey()
          const now = 2_000_000
          const tight = policiesOf(
            { algorithm, limit: 2, window: 1000 },
            { algorithm, limit: 5, window: 60_000 },
          )
          for (let i = 0; i < 2; i++) {
            expect((await store.consume({ key, policies: tight, cost: 1, now })).outcomes).toEqual([
              expect.objectContaining({ allowed: true }),
              expect.objectContaining({ allowed: true }),
            ])
          }
          const third = await store.consume({ key, policies: tight, cost: 1, now })
          expect(third.outcomes.map((o) => o.allowed)).toEqual([false, true])
          // The hourly-style limit admitted it but must not have counted it.
          const look = await store.peek({ key, policies: tight, cost: 0, now })
          expect(look.outcomes[1].remaining).toBe(3)

          const other = freshKey()
          const loose = policiesOf(
            { algorithm, limit: 5, window: 1000 },
            { algorithm, limit: 2, window: 60_000 },
          )
          await store.consume({ key: other, policies: loose, cost: 2, now })
          const rejected = await store.consume({ key: other, policies: loose, cost: 1, now })
          expect(rejected.outcomes.map((o) => o.allowed)).toEqual([true, false])
          const after = await store.peek({ key: other, policies: loose, cost: 0, now })
          expect(after.outcomes[0].remaining).toBe(3)
        })
      }
    }

    // ---- Randomized traces against core's pure transitions ---------------------------------

    /** Replays a trace on the store and on the reference model; every outcome must match. */
    async function replay(policies: Policy[], start: number, steps: readonly Step[]) {
      const key = freshKey()
      const model = new ReferenceModel(policies)
      let now = start
      const admitted: number[] = []
      for (const [index, step] of steps.entries()) {
        now += step.dt
        const where = `step ${index} (${step.op} at ${now})`
        if (step.op === 'consume') {
          const expected = model.consume(now, step.cost)
          const { outcomes } = await store.consume({ key, policies, cost: step.cost, now })
          expect({ where, outcomes: plain(outcomes) }).toEqual({ where, outcomes: expected })
          if (expected.every((o) => o.allowed)) admitted.push(now)
        } else if (step.op === 'peek') {
          const expected = model.peek(now, step.cost)
          const { outcomes } = await store.peek({ key, policies, cost: step.cost, now })
          expect({ where, outcomes: plain(outcomes) }).toEqual({ where, outcomes: expected })
        } else if (step.op === 'refund') {
          if (!refunds) continue
          const at = admitted.length > 0 ? admitted[step.pick % admitted.length] : now
          model.refund(now, step.cost, at)
          await store.refund({ key, policies, cost: step.cost, now, at })
        } else {
          model.reset()
          await store.reset(key, policies)
        }
      }
    }

    for (const algorithm of supported) {
      test(`randomized traces equal core's transitions (${algorithm})`, async () => {
        await fc.assert(
          fc.asyncProperty(
            limitArbitrary(algorithm),
            fc.integer({ min: 0, max: 10_000_000 }),
            fc.array(stepArbitrary(3000), { minLength: 1, maxLength: 40 }),
            async (limit, start, steps) => {
              await replay([resolvePolicy(limit)], start, steps)
            },
          ),
          { numRuns: traceRuns },
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
            fc.array(stepArbitrary(3000), { minLength: 1, maxLength: 40 }),
            async (options, start, steps) => {
              // Unique names, as the limiter requires; ids may repeat (then state is shared).
              const policies = options.map((o, i) => resolvePolicy({ ...o, name: `l${i}` }))
              await replay(policies, start, steps)
            },
          ),
          { numRuns: traceRuns },
        )
      })
    }
  })
}
