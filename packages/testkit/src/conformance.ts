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
  type StoreResult,
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
   * Whether `block` is implemented (a block kept apart from the counters).
   * @default true
   */
  readonly block?: boolean
  /**
   * Whether `penalize` and `refund` without `at` (a reward) are implemented.
   * @default true
   */
  readonly penalize?: boolean
  /**
   * Whether `StoreRequest.keys` (per-policy state keys within one group key) is implemented.
   * @default true
   */
  readonly keys?: boolean
  /**
   * Whether `StoreRequest.maxDelayMs` (reservations on the meter algorithms) is implemented.
   * @default true
   */
  readonly reservations?: boolean
  /**
   * Algorithms whose decisions made together in one process (not awaited one by one) are
   * decided in the order they were made. For the others the store may decide them in another
   * order, each still exact (MemcachedStore's counters: read, then increment).
   * @default every algorithm the store runs
   */
  readonly ordered?: readonly AlgorithmName[]
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

  consume(now: number, cost: number, maxDelayMs?: number): PolicyOutcome[] {
    const outcomes = this.decide(now, cost, maxDelayMs)
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

  /** `at` undefined: a reward. */
  refund(now: number, cost: number, at?: number): void {
    for (const policy of this.policies) {
      const state = this.states.get(policy.id)
      if (state !== undefined) algorithms[policy.algorithm].refund(state, 0, now, policy, cost, at)
    }
  }

  penalize(now: number, cost: number): void {
    for (const policy of this.policies) {
      algorithms[policy.algorithm].penalize(this.state(policy), 0, now, policy, cost)
    }
  }

  reset(): void {
    this.states.clear()
  }

  private decide(now: number, cost: number, maxDelayMs?: number): PolicyOutcome[] {
    return this.policies.map((policy) => {
      const out = blankOutcome()
      algorithms[policy.algorithm].decide(this.state(policy), 0, now, policy, cost, out, maxDelayMs)
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
  | { readonly op: 'wait'; readonly dt: number; readonly cost: number; readonly maxDelayMs: number }
  | { readonly op: 'penalize'; readonly dt: number; readonly cost: number }
  | { readonly op: 'reward'; readonly dt: number; readonly cost: number }
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

function stepArbitrary(
  maxDt: number,
  extra: { penalize: boolean; reservations: boolean } = { penalize: false, reservations: false },
): fc.Arbitrary<Step> {
  const dt = fc.oneof(fc.constant(0), fc.integer({ min: 0, max: maxDt }))
  const more: { weight: number; arbitrary: fc.Arbitrary<Step> }[] = []
  if (extra.penalize) {
    more.push(
      {
        weight: 1,
        arbitrary: fc.record({
          op: fc.constant('penalize' as const),
          dt,
          cost: fc.integer({ min: 1, max: 12 }),
        }),
      },
      {
        weight: 1,
        arbitrary: fc.record({
          op: fc.constant('reward' as const),
          dt,
          cost: fc.integer({ min: 1, max: 12 }),
        }),
      },
    )
  }
  if (extra.reservations) {
    more.push({
      weight: 3,
      arbitrary: fc.record({
        op: fc.constant('wait' as const),
        dt,
        cost: costs,
        maxDelayMs: fc.integer({ min: 1, max: 2 * maxDt }),
      }),
    })
  }
  return fc.oneof(
    ...more,
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
  const blocks = capabilities.block ?? true
  const penalties = capabilities.penalize ?? true
  const stateKeys = capabilities.keys ?? true
  const reservations = capabilities.reservations ?? true
  const extraSteps = { penalize: penalties, reservations }
  const traceRuns = capabilities.traceRuns ?? 60
  const ordered = supported.filter((a) => capabilities.ordered?.includes(a) ?? true)
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

    test('every time a decision reports is a whole number of ms', async () => {
      const odd = { limit: 7, window: 1300 }
      for (const algorithm of supported) {
        const { limiter, clock, key } = limiterAt(1_700_000_000_123, { algorithm, ...odd })
        const seen: number[] = []
        for (let i = 0; i < 40; i++) {
          clock.now += (i * 37) % 211
          const d = await limiter.consume(key, { cost: 1 + (i % 3) })
          seen.push(d.resetMs, d.delayMs)
          if (Number.isFinite(d.retryAfterMs)) seen.push(d.retryAfterMs)
        }
        expect({ algorithm, fractions: seen.filter((ms) => !Number.isInteger(ms)) }).toEqual({
          algorithm,
          fractions: [],
        })
      }
    })

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

    // ---- Operations on keys: block, penalize, reward ---------------------------------------

    if (blocks && supported.length > 0) {
      const algorithm = supported.includes('fixed-window') ? 'fixed-window' : supported[0]
      const policies = policiesOf({ algorithm, limit: 3, window: 600_000 })

      test(`block: rejects with retryAfterMs = until - now, counters untouched (${algorithm})`, async () => {
        const key = freshKey()
        const now = 3_000_000
        await store.consume({ key, policies, cost: 1, now })
        await store.block({ key, until: now + 5000, now })
        for (const op of ['consume', 'peek'] as const) {
          const { outcomes } = await store[op]({ key, policies, cost: 1, now: now + 1000 })
          expect(plain(outcomes)).toEqual([
            { allowed: false, remaining: 0, resetMs: 4000, retryAfterMs: 4000, delayMs: 0 },
          ])
        }
        // Cost 0 (how much is left) is refused the same way while the block holds.
        const look = await store.peek({ key, policies, cost: 0, now: now + 2000 })
        expect(look.outcomes[0]).toMatchObject({ allowed: false, retryAfterMs: 3000 })
        // Lifted by time; the counters saw only the first request.
        const after = await store.consume({ key, policies, cost: 1, now: now + 5000 })
        expect(after.outcomes[0]).toMatchObject({ allowed: true, remaining: 1 })
      })

      test('block: a later block replaces an earlier one, until <= now lifts it, reset lifts it', async () => {
        const key = freshKey()
        const now = 3_000_000
        await store.block({ key, until: now + 9000, now })
        await store.block({ key, until: now + 2000, now })
        let { outcomes } = await store.consume({ key, policies, cost: 1, now: now + 500 })
        expect(outcomes[0]).toMatchObject({ allowed: false, retryAfterMs: 1500 })
        await store.block({ key, until: now + 60_000, now: now + 500 })
        ;({ outcomes } = await store.consume({ key, policies, cost: 1, now: now + 1000 }))
        expect(outcomes[0]).toMatchObject({ allowed: false, retryAfterMs: 59_000 })
        await store.block({ key, until: now + 1000, now: now + 1000 })
        ;({ outcomes } = await store.consume({ key, policies, cost: 1, now: now + 1000 }))
        expect(outcomes[0]).toMatchObject({ allowed: true, remaining: 2 })
        await store.block({ key, until: now + 60_000, now: now + 1000 })
        await store.reset(key, policies)
        ;({ outcomes } = await store.consume({ key, policies, cost: 1, now: now + 1000 }))
        expect(outcomes[0]).toMatchObject({ allowed: true, remaining: 2 })
      })

      test('block: over the limit, then blocked, then lifted (no stale answer in between)', async () => {
        const key = freshKey()
        const now = 3_000_000
        const tight = policiesOf({ algorithm, limit: 1, window: 600_000 })
        await store.consume({ key, policies: tight, cost: 1, now })
        const over = await store.consume({ key, policies: tight, cost: 1, now })
        expect(over.outcomes[0].allowed).toBe(false)
        const counted = over.outcomes[0].retryAfterMs
        await store.block({ key, until: now + counted + 50_000, now })
        let { outcomes } = await store.consume({ key, policies: tight, cost: 1, now })
        expect(outcomes[0]).toMatchObject({ allowed: false, retryAfterMs: counted + 50_000 })
        await store.block({ key, until: now, now })
        ;({ outcomes } = await store.consume({ key, policies: tight, cost: 1, now }))
        expect(outcomes[0]).toMatchObject({ allowed: false, retryAfterMs: counted })
      })

      if (multiple) {
        test('block: every policy of the key answers blocked', async () => {
          const key = freshKey()
          const now = 3_000_000
          const two = policiesOf(
            { algorithm, limit: 3, window: 600_000 },
            { algorithm, limit: 9, window: 60_000 },
          )
          await store.block({ key, until: now + 700, now })
          const { outcomes } = await store.consume({ key, policies: two, cost: 1, now })
          expect(outcomes.map((o) => [o.allowed, o.retryAfterMs, o.remaining])).toEqual([
            [false, 700, 0],
            [false, 700, 0],
          ])
          const free = await store.consume({ key, policies: two, cost: 1, now: now + 700 })
          expect(free.outcomes.map((o) => o.remaining)).toEqual([2, 8])
        })
      }
    }

    if (penalties) {
      for (const algorithm of supported) {
        test(`penalize never goes beyond full, reward never below empty (${algorithm})`, async () => {
          const key = freshKey()
          const now = 4_000_000
          const policies = policiesOf({ algorithm, limit: 3, window: 600_000 })
          await store.consume({ key, policies, cost: 1, now })
          await store.penalize({ key, policies, cost: 1, now })
          let look = await store.peek({ key, policies, cost: 0, now })
          expect(look.outcomes[0].remaining).toBe(1)
          await store.penalize({ key, policies, cost: 100, now })
          look = await store.peek({ key, policies, cost: 0, now })
          expect(look.outcomes[0].remaining).toBe(0)
          // Full, not beyond: one unit given back is one request.
          await store.refund({ key, policies, cost: 1, now })
          expect((await store.consume({ key, policies, cost: 1, now })).outcomes[0].allowed).toBe(
            true,
          )
          expect((await store.consume({ key, policies, cost: 1, now })).outcomes[0].allowed).toBe(
            false,
          )
          // A reward larger than the usage leaves the key empty, not in credit.
          await store.refund({ key, policies, cost: 100, now })
          look = await store.peek({ key, policies, cost: 0, now })
          expect(look.outcomes[0].remaining).toBe(3)
          const again = await burstOn(key, policies, 4, now)
          expect(again).toEqual([true, true, true, false])
          // A penalty on a key never seen fills it.
          const fresh = freshKey()
          await store.penalize({ key: fresh, policies, cost: 7, now })
          expect(
            (await store.peek({ key: fresh, policies, cost: 1, now })).outcomes[0].allowed,
          ).toBe(false)
        })
      }

      if (supported.includes('sliding-log')) {
        test('reward on sliding-log takes the newest timestamps first', async () => {
          const key = freshKey()
          const policies = policiesOf({ algorithm: 'sliding-log', limit: 3, window: 10_000 })
          await store.consume({ key, policies, cost: 1, now: 100_000 })
          await store.consume({ key, policies, cost: 2, now: 105_000 })
          await store.refund({ key, policies, cost: 2, now: 106_000 })
          // Left: the one at 100000, so the key frees up at 110000, not 115000.
          const look = await store.peek({ key, policies, cost: 0, now: 106_000 })
          expect(look.outcomes[0]).toMatchObject({ remaining: 2, resetMs: 4000 })
        })
      }
    }

    async function burstOn(key: string, policies: Policy[], n: number, now: number) {
      const out: boolean[] = []
      for (let i = 0; i < n; i++) {
        out.push((await store.consume({ key, policies, cost: 1, now })).outcomes[0].allowed)
      }
      return out
    }

    // ---- Per-policy state keys (rules) ------------------------------------------------------

    if (stateKeys && multiple && supported.length > 0) {
      const algorithm = supported.includes('sliding-window') ? 'sliding-window' : supported[0]

      test(`keys: two rules with different state keys in one all-or-nothing call (${algorithm})`, async () => {
        const group = freshKey()
        const now = 5_000_000
        const rules = [
          resolvePolicy({ algorithm, limit: 2, window: 600_000, name: 'route' }),
          resolvePolicy({ algorithm, limit: 5, window: 600_000, name: 'user' }),
        ]
        const a = ['route:/a', 'user:1']
        const b = ['route:/b', 'user:1']
        for (let i = 0; i < 2; i++) {
          const { outcomes } = await store.consume({
            key: group,
            keys: a,
            policies: rules,
            cost: 1,
            now,
          })
          expect(outcomes.map((o) => o.allowed)).toEqual([true, true])
        }
        const third = await store.consume({ key: group, keys: a, policies: rules, cost: 1, now })
        expect(third.outcomes.map((o) => o.allowed)).toEqual([false, true])
        // The user rule did not count the rejected request, and /b shares the user's state only.
        const other = await store.consume({ key: group, keys: b, policies: rules, cost: 1, now })
        expect(other.outcomes.map((o) => [o.allowed, o.remaining])).toEqual([
          [true, 1],
          [true, 2],
        ])
        // The group key without `keys` is another state.
        const bare = await store.peek({ key: group, policies: rules.slice(0, 1), cost: 0, now })
        expect(bare.outcomes[0].remaining).toBe(2)
        // Same policy (same id) under two state keys: two states.
        const same = [
          resolvePolicy({ algorithm, limit: 1, window: 600_000, name: 'x' }),
          resolvePolicy({ algorithm, limit: 1, window: 600_000, name: 'y' }),
        ]
        const twice = await store.consume({
          key: group,
          keys: ['x', 'y'],
          policies: same,
          cost: 1,
          now,
        })
        expect(twice.outcomes.map((o) => o.allowed)).toEqual([true, true])
        // A block on the group refuses every state key of it; reset with keys forgets them.
        await store.block({ key: group, until: now + 1000, now })
        const blocked = await store.consume({ key: group, keys: b, policies: rules, cost: 1, now })
        expect(blocked.outcomes.map((o) => o.retryAfterMs)).toEqual([1000, 1000])
        await store.reset(group, rules, a)
        const fresh = await store.peek({ key: group, keys: a, policies: rules, cost: 0, now })
        expect(fresh.outcomes.map((o) => o.remaining)).toEqual([2, 5])
        const kept = await store.peek({ key: group, keys: b, policies: rules, cost: 0, now })
        expect(kept.outcomes.map((o) => o.remaining)).toEqual([1, 5])
        // penalize and reward follow the state keys too.
        if (penalties) {
          await store.penalize({ key: group, keys: b, policies: rules, cost: 1, now })
          const p = await store.peek({ key: group, keys: b, policies: rules, cost: 0, now })
          expect(p.outcomes.map((o) => o.remaining)).toEqual([0, 4])
          await store.refund({ key: group, keys: b, policies: rules, cost: 5, now })
          const r = await store.peek({ key: group, keys: b, policies: rules, cost: 0, now })
          expect(r.outcomes.map((o) => o.remaining)).toEqual([2, 5])
        }
      })
    }

    // ---- Reservations (limiter.wait) --------------------------------------------------------

    if (reservations) {
      for (const algorithm of meters) {
        test(`maxDelayMs: reservations at the policy's pace, none early; beyond it nothing is written (${algorithm})`, async () => {
          const key = freshKey()
          const now = 6_000_000
          // 10 a second (one every 100 ms), room for 2 at once.
          const policies = policiesOf({ algorithm, limit: 10, window: 1000, burst: 2 })
          const delays: number[] = []
          for (let i = 0; i < 20; i++) {
            const { outcomes } = await store.consume({
              key,
              policies,
              cost: 1,
              now,
              maxDelayMs: 1000,
            })
            if (!outcomes[0].allowed) break
            delays.push(outcomes[0].delayMs)
          }
          // token-bucket and gcra: two fit now, then one each 100 ms, up to 1000 ms ahead.
          // leaky-bucket shapes every request, 100 ms apart from the first, up to 1000 ms.
          expect(delays).toEqual(
            algorithm === 'leaky-bucket'
              ? [0, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000]
              : [0, 0, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000],
          )
          // The one beyond maxDelayMs was rejected and wrote nothing.
          const before = await store.peek({ key, policies, cost: 0, now })
          const beyond = await store.consume({ key, policies, cost: 1, now, maxDelayMs: 1000 })
          expect(beyond.outcomes[0]).toMatchObject({
            allowed: false,
            retryAfterMs: 100,
            delayMs: 0,
          })
          expect(await store.peek({ key, policies, cost: 0, now })).toEqual(before)
          // Giving one reservation back (an aborted wait) frees exactly that slot.
          await store.refund({ key, policies, cost: 1, now, at: now })
          const back = await store.consume({ key, policies, cost: 1, now, maxDelayMs: 1000 })
          expect(back.outcomes[0]).toMatchObject({ allowed: true, delayMs: 1000 })
          // Without maxDelayMs nothing passes now.
          const plainNow = await store.consume({ key, policies, cost: 1, now })
          expect(plainNow.outcomes[0].allowed).toBe(false)
          // 300 ms later the queue has moved on by 3: a reservation waits 800.
          const later = await store.consume({
            key,
            policies,
            cost: 1,
            now: now + 300,
            maxDelayMs: 1000,
          })
          expect(later.outcomes[0]).toMatchObject({ allowed: true, delayMs: 800 })
        })
      }

      for (const algorithm of windowed) {
        test(`maxDelayMs is ignored by ${algorithm} (no reservations on counters)`, async () => {
          const key = freshKey()
          const now = 6_000_000
          const policies = policiesOf({ algorithm, limit: 1, window: 1000 })
          await store.consume({ key, policies, cost: 1, now })
          const { outcomes } = await store.consume({
            key,
            policies,
            cost: 1,
            now,
            maxDelayMs: 60_000,
          })
          expect(outcomes[0]).toMatchObject({ allowed: false, delayMs: 0 })
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
        } else if (step.op === 'wait') {
          const { cost, maxDelayMs } = step
          const expected = model.consume(now, cost, maxDelayMs)
          const { outcomes } = await store.consume({ key, policies, cost, now, maxDelayMs })
          expect({ where, maxDelayMs, outcomes: plain(outcomes) }).toEqual({
            where,
            maxDelayMs,
            outcomes: expected,
          })
          if (expected.every((o) => o.allowed)) admitted.push(now)
        } else if (step.op === 'penalize') {
          model.penalize(now, step.cost)
          await store.penalize({ key, policies, cost: step.cost, now })
        } else if (step.op === 'reward') {
          model.refund(now, step.cost)
          await store.refund({ key, policies, cost: step.cost, now })
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
            fc.array(stepArbitrary(3000, extraSteps), { minLength: 1, maxLength: 40 }),
            async (limit, start, steps) => {
              await replay([resolvePolicy(limit)], start, steps)
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
              const policies = [resolvePolicy(limit)]
              const keys = [freshKey(), freshKey(), freshKey()]
              const models = keys.map(() => new ReferenceModel(policies))
              let now = start
              for (const [index, group] of groups.entries()) {
                now += group.dt
                const expected: PolicyOutcome[][] = []
                const made: Promise<StoreResult>[] = []
                for (const call of group.calls) {
                  now += call.dt
                  expected.push(models[call.key].consume(now, call.cost))
                  made.push(store.consume({ key: keys[call.key], policies, cost: call.cost, now }))
                }
                const outcomes = (await Promise.all(made)).map((r) => plain(r.outcomes))
                expect({ group: index, outcomes }).toEqual({ group: index, outcomes: expected })
              }
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
              await replay(policies, start, steps)
            },
          ),
          { numRuns: traceRuns },
        )
      })
    }
  })
}
