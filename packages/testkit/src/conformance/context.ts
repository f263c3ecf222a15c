/**
 * Owns what every group of conformance cases shares: the store under test (opened before the
 * cases, closed after), fresh keys, limiters on the store, and the store's capabilities.
 */
import {
  ALGORITHMS,
  createLimiter,
  type AlgorithmName,
  type LimiterOptions,
  type LimitOptions,
  type Policy,
  type Store,
} from '@sluice/core'
import { resolvePolicy, ROWS } from '@sluice/core/adapter'

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

/** What the conformance cases read: the store (once opened), helpers, and capabilities. */
export interface ConformanceContext {
  /** The store under test; read inside a case (it is opened in beforeAll). */
  readonly store: Store
  /** A key no other case (or earlier run on a shared server) has used. */
  freshKey(): string
  /** A limiter on the store under test with a clock the case moves by hand. */
  limiterAt(
    start: number,
    options: LimiterOptions,
  ): { limiter: ReturnType<typeof createLimiter>; clock: { now: number }; key: string }
  burst(
    limiter: ReturnType<typeof createLimiter>,
    key: string,
    n: number,
    cost?: number,
  ): Promise<Awaited<ReturnType<ReturnType<typeof createLimiter>['consume']>>[]>
  policiesOf(...limits: LimitOptions[]): Policy[]
  /** `n` cost-1 consumes straight on the store: whether each was admitted. */
  burstOn(key: string, policies: Policy[], n: number, now: number): Promise<boolean[]>
  readonly supported: readonly AlgorithmName[]
  readonly multiple: boolean
  readonly refunds: boolean
  readonly blocks: boolean
  readonly penalties: boolean
  readonly stateKeys: boolean
  readonly reservations: boolean
  readonly extraSteps: { penalize: boolean; reservations: boolean }
  readonly traceRuns: number
  readonly ordered: readonly AlgorithmName[]
  readonly meters: readonly AlgorithmName[]
  readonly windowed: readonly AlgorithmName[]
}

/** Opens the store before the cases of the enclosing describe and closes it after them. */
export function openConformance(
  factory: () => Promise<StoreUnderTest>,
  capabilities: StoreCapabilities,
): ConformanceContext {
  const supported = capabilities.algorithms ?? ALGORITHMS
  let subject: StoreUnderTest | undefined
  let keys = 0
  beforeAll(async () => {
    subject = await factory()
  })
  afterAll(async () => {
    await subject?.close()
  })
  const context: ConformanceContext = {
    get store(): Store {
      if (subject === undefined) throw new Error('the store under test is not open yet')
      return subject.store
    },
    freshKey: () => `conf:${process.pid}:${Date.now().toString(36)}:${(keys++).toString(36)}`,
    limiterAt(start, options) {
      const clock = { now: start }
      const limiter = createLimiter({ ...options, store: context.store, clock: () => clock.now })
      return { limiter, clock, key: context.freshKey() }
    },
    async burst(limiter, key, n, cost = 1) {
      const out = []
      for (let i = 0; i < n; i++) out.push(await limiter.consume(key, { cost }))
      return out
    },
    policiesOf: (...limits) => limits.map((limit) => resolvePolicy(limit)),
    async burstOn(key, policies, n, now) {
      const out: boolean[] = []
      for (let i = 0; i < n; i++) {
        out.push((await context.store.consume({ key, policies, cost: 1, now })).outcomes[0].allowed)
      }
      return out
    },
    supported,
    multiple: capabilities.multiplePolicies ?? true,
    refunds: capabilities.refund ?? true,
    blocks: capabilities.block ?? true,
    penalties: capabilities.penalize ?? true,
    stateKeys: capabilities.keys ?? true,
    reservations: capabilities.reservations ?? true,
    extraSteps: {
      penalize: capabilities.penalize ?? true,
      reservations: capabilities.reservations ?? true,
    },
    traceRuns: capabilities.traceRuns ?? 60,
    ordered: supported.filter((a) => capabilities.ordered?.includes(a) ?? true),
    meters: supported.filter((a) => ROWS[a].family === 'meter'),
    windowed: supported.filter((a) => ROWS[a].family !== 'meter'),
  }
  return context
}
