import { setTimeout as delay } from 'node:timers/promises'
import fc from 'fast-check'
import type { Policy, StoreResult } from '@sluice/core'
import { resolvePolicy } from '@sluice/core/adapter'
import { algorithmOf, isWide } from '@sluice/core/web'
import { policyKeyId, RedisStore, type RedisStoreOptions } from '@sluice/redis'
import { blankOutcome } from '@sluice/testkit'
import { Planner } from '../src/plan'
import type { Redis } from 'ioredis'
import { useRedisServer } from './fixtures/redis-server'

// A wide meter's backlog below 2^52 is decided in plain numbers, past it in limbs (core's
// meter.wide.lua.ts). Held here to core's BigInt transitions where the two meet: a backlog
// filled to exactly its capacity, costs that take it past 2^52 and refunds that bring it back,
// batched and alone, beside a narrow limit and on the packed layout; each outcome, the state
// text and its TTL (the last write, as MONITOR saw it). The conformance suite's
// wide traces cross 2^52 too (testkit conformance/wide.ts), at random.

const MONTH = 31 * 86_400_000
/** Tokens whose month of backlog is 2^52. */
const EDGE = 2 ** 52 / MONTH

type Meter = 'gcra' | 'token-bucket' | 'leaky-bucket'

/**
 * A month's budget whose capacity stays below 2^52 (`low`) or passes it. An `even` limit divides
 * the window, so a backlog of whole tokens drains to exactly 0 at a whole ms (the `drain`
 * step); another leaves remainders (gcra's state keeps one below its limit).
 */
function monthly(algorithm: Meter, low: boolean, even: boolean): Policy {
  const limit = (low ? MONTH / 2000 : MONTH / 1000) + (even ? 0 : 7)
  const burst = algorithm === 'gcra' ? {} : { burst: low ? 1_000_003 : 3_000_017 }
  return resolvePolicy({ name: 'month', algorithm, window: MONTH, limit, ...burst })
}

/**
 * A narrow limit beside it, the several-policy (generic) script: it refuses only after the clock
 * stepped back (its TAT then runs ahead by the step).
 */
const minute = resolvePolicy({ name: 'minute', algorithm: 'gcra', limit: 10 ** 9, window: 60_000 })

/**
 * One step: consumes sent in one turn (one batch), a reservation, a peek, a timed refund, or a
 * consume when the backlog has drained to exactly 0 (`early` ms before).
 */
type Step =
  | { op: 'consume'; dt: number; costs: Cost[] }
  | { op: 'drain'; early: number; cost: Cost }
  | { op: 'wait'; dt: number; cost: Cost }
  | { op: 'peek'; dt: number }
  | { op: 'refund'; dt: number; back: number }

/** A cost: tokens, or what is left (`rest`: to exactly the capacity) or `rest` + 1. */
type Cost = number | 'rest' | 'over'

const cost = fc.oneof(
  fc.constantFrom<Cost>('rest', 'over', 1, Math.floor(EDGE), Math.ceil(EDGE)),
  fc.integer({ min: 1, max: 1_200_000 }),
)
// Negative: the clock stepped back (an NTP correction), which holds a bucket's level and keeps
// a TAT ahead.
const dt = fc.constantFrom(0, 0, 1, 7, 1000, 3_600_000, -1, -1000, -3_600_000)
const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant('consume' as const),
      dt,
      costs: fc.array(cost, { minLength: 1, maxLength: 4 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('wait' as const), dt, cost }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('peek' as const), dt }) },
  {
    weight: 2,
    arbitrary: fc.record({ op: fc.constant('drain' as const), early: fc.constantFrom(0, 1), cost }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('refund' as const),
      dt,
      back: fc.integer({ min: 0, max: 3 }),
    }),
  },
)

describe('wide meters across 2^52 of backlog on a real Redis', () => {
  const redis = useRedisServer()
  let run = 0
  /** Every command the server ran, scripts' included (MONITOR), in order. */
  const seen: string[][] = []
  let monitor: Redis | undefined
  beforeAll(async () => {
    monitor = await redis.connect().monitor()
    monitor.on('monitor', (_time: string, args: string[]) => seen.push(args))
  })
  afterAll(() => monitor?.disconnect())

  /** The last write of `key` the monitor saw, once it has seen everything sent before. */
  async function lastWrite(key: string): Promise<string[] | undefined> {
    const mark = `${key}:seen`
    await redis.admin.set(mark, '1')
    while (!seen.some((args) => args[1] === mark)) await delay(5)
    return seen.filter((args) => args[1] === key && /^(set|del)$/i.test(args[0]!)).pop()
  }

  /** Replays `steps` on one key, each outcome and the state text beside core's. */
  async function replay(
    policy: Policy,
    beside: boolean,
    options: Partial<RedisStoreOptions>,
    steps: Step[],
  ): Promise<void> {
    const prefix = `wn${run++}`
    // No block cache: it answers a refused key on the client's clock, which a step back would
    // count down apart from the state the scripts hold.
    const store = new RedisStore({
      client: redis.connect(),
      time: 'client',
      prefix,
      blockCache: false,
      ...options,
    })
    const policies = beside ? [policy, minute] : [policy]
    // Core's state of each policy; the first is the wide one, whose writes are watched.
    const models = policies.map((p) => {
      const transitions = algorithmOf(p)
      return { p, transitions, state: new Array<number>(transitions.slots(p)).fill(0) }
    })
    const { transitions, state } = models[0]!
    const charges: { at: number; cost: number }[] = []
    const base = { key: 'k', policies }
    let now = 1_700_000_000_000
    /** What is left now, as core reads it. */
    const rest = (): number => {
      const out = blankOutcome()
      transitions.decide(state, 0, now, policy, 0, out)
      return out.remaining
    }
    const tokens = (c: Cost): number =>
      c === 'rest' ? Math.max(1, rest()) : c === 'over' ? rest() + 1 : c
    /** When the wide state was last written, and when core says it expires from then. */
    let written: { now: number; expiresAt: number } | undefined
    const wrote = (): void => {
      written = { now, expiresAt: transitions.expiresAt(state, 0, policy) }
      // A state written empty is deleted, and read back as a new key's: all zeros.
      for (const m of models) if (m.transitions.expiresAt(m.state, 0, m.p) <= now) m.state.fill(0)
    }
    /** Each policy's outcome as core decides it now. */
    const decideAll = (cost: number, maxDelayMs?: number) =>
      models.map(({ p, transitions: t, state: st }) => {
        const want = blankOutcome()
        t.decide(st, 0, now, p, cost, want, maxDelayMs)
        return want
      })
    /** The store's outcomes beside core's; all policies charged, or none. */
    const expectOutcome = (result: StoreResult, cost: number, maxDelayMs?: number): void => {
      const wants = decideAll(cost, maxDelayMs)
      if (wants.every((want) => want.allowed)) {
        for (const m of models) m.transitions.apply(m.state, 0, now, m.p, cost)
        charges.push({ at: now, cost })
        wrote()
      }
      expect(result.outcomes).toEqual(wants)
    }
    for (const s of steps) {
      if (s.op === 'drain') {
        const full = blankOutcome()
        transitions.decide(state, 0, now, policy, 0, full)
        now += Math.max(0, full.resetMs - s.early)
        const c = tokens(s.cost)
        expectOutcome(await store.consume({ ...base, cost: c, now }), c)
        continue
      }
      now += s.dt
      if (s.op === 'consume') {
        // In one turn: one batch, each decided after the one before, as core decides them.
        const costs: number[] = []
        for (const c of s.costs) costs.push(c === 'rest' || c === 'over' ? tokens(c) : c)
        const results = await Promise.all(
          costs.map((c) => store.consume({ ...base, cost: c, now })),
        )
        results.forEach((result, i) => expectOutcome(result, costs[i]!))
      } else if (s.op === 'wait') {
        const c = tokens(s.cost)
        expectOutcome(await store.consume({ ...base, cost: c, now, maxDelayMs: 60_000 }), c, 60_000)
      } else if (s.op === 'peek') {
        expect((await store.peek({ ...base, cost: 0, now })).outcomes).toEqual(decideAll(0))
      } else {
        const charge = charges.splice(Math.max(0, charges.length - 1 - s.back), 1)[0]
        if (charge === undefined) continue
        await store.refund({ ...base, cost: charge.cost, now, at: charge.at })
        for (const m of models) m.transitions.refund(m.state, 0, now, m.p, charge.cost, charge.at)
        wrote()
      }
    }
    if (options.packed !== undefined) return
    const stateKey = `${prefix}:{k}:${policyKeyId(policy)}:v`
    const stored = await redis.admin.get(stateKey)
    // A state with nothing to remember (a full meter) is deleted; any other is core's, as text.
    if (stored === null) expect(rest()).toBe(policy.burst)
    else expect(stored).toBe(state.join(','))
    // Its TTL, as the last write set it: until core's expiry, plus clockToleranceMs (1000).
    const write = await lastWrite(stateKey)
    if (written === undefined) return expect(write).toBeUndefined()
    if (written.expiresAt <= written.now) return expect(write?.[0]?.toLowerCase()).toBe('del')
    expect(write).toEqual([
      'SET',
      stateKey,
      state.join(','),
      'PX',
      String(written.expiresAt - written.now + 1000),
    ])
  }

  const meters: Meter[] = ['gcra', 'token-bucket', 'leaky-bucket']
  for (const algorithm of meters) {
    for (const [low, even] of [
      [true, true],
      [true, false],
      [false, true],
      [false, false],
    ]) {
      const policy = monthly(algorithm, low, even)
      const name = `${algorithm}, capacity ${low ? 'below' : 'past'} 2^52, limit ${policy.limit}`

      test(`${name}: alone (its own script), as core decides`, async () => {
        expect(isWide(policy)).toBe(true)
        await fc.assert(
          fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 14 }), (steps) =>
            replay(policy, false, {}, steps),
          ),
          { numRuns: 20 },
        )
      })

      test(`${name}: beside a narrow limit, and packed, as core decides`, async () => {
        await fc.assert(
          fc.asyncProperty(
            fc.array(step, { minLength: 1, maxLength: 10 }),
            fc.boolean(),
            (steps, packed) => replay(policy, true, packed ? { packed: { groups: 4 } } : {}, steps),
          ),
          { numRuns: 10 },
        )
      })
    }
  }

  test.each([
    ['gcra', '7'],
    ['gcra', '1,2,3'],
    ['token-bucket', '1,2'],
    ['token-bucket', '1.5,2,3'],
    ['token-bucket', '1,2,3 '],
    ['leaky-bucket', 'not a state'],
  ] as const)(
    'a `:v` key that is not a state this store wrote fails the call (%s, %j)',
    async (algorithm, text) => {
      const policy = monthly(algorithm, true, true)
      const store = new RedisStore({ client: redis.connect(), time: 'client', prefix: 'wn-bad' })
      const key = `wn-bad:{mallory}:${policyKeyId(policy)}:v`
      await redis.admin.set(key, text)
      for (const policies of [[policy], [policy, minute]]) {
        await expect(
          store.consume({ key: 'mallory', policies, cost: 1, now: 1_000_000 }),
        ).rejects.toThrow(`sluice: ${key} holds ${text}, not a state this store wrote`)
      }
      expect(await redis.admin.get(key)).toBe(text)
    },
  )

  test('the script replies a backlog below 2^52 as one integer, past it as five limbs', async () => {
    const policy = monthly('token-bucket', false, true)
    const { own } = new Planner('0', 1).plan([policy])
    const key = `wn-reply:{k}:${policyKeyId(policy)}:v`
    const consume = (tokens: number): Promise<unknown> =>
      redis.admin.eval(own!.lua, 2, key, 'wn-reply:{k}:b', '', 'c', '1000', String(tokens))
    const below = Math.floor(EDGE) - 10
    // The reply is the backlog each consume found: none, then `below` tokens' worth.
    expect(await consume(below)).toBe(0)
    expect(await consume(1)).toBe(below * MONTH)
    // A cost that takes it past 2^52 is decided in limbs, and so is what is past it.
    expect(await consume(30)).toHaveLength(5)
    const past = await consume(1)
    expect(Array.isArray(past) && past.length === 5).toBe(true)
    let backlog = 0n
    for (const limb of (past as number[]).reverse()) backlog = (backlog << 24n) + BigInt(limb)
    expect(backlog).toBe(BigInt(below + 31) * BigInt(MONTH))
  })
})
