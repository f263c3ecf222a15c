import { createLimiter, type Policy } from '@sluice/core'
import { resolvePolicy } from '@sluice/core/adapter'
import { algorithmOf } from '@sluice/core/web'
import { policyKeyId, RedisStore, SCRIPTS } from '@sluice/redis'
import { blankOutcome } from '@sluice/testkit'
import { Planner } from '../src/plan'
import { routeOf } from '../src/route'
import { useRedisServer } from './fixtures/redis-server'

// One wide policy (limit x window past 2^50) alone is decided by its own flat script
// (lua/flat/wide.ts): its limbs module with the policy baked in, batched as a narrow policy's
// flat script. Held here to core's BigInt transitions on a real Redis, batched and alone; the
// conformance suite runs the wide traces on every store (conformance.test.ts).

const MONTH = 31 * 86_400_000
const wide = (algorithm: 'gcra' | 'token-bucket' | 'leaky-bucket'): Policy =>
  resolvePolicy({ algorithm, limit: 10 ** 12 - 1, burst: 2 * 10 ** 12 + 3, window: MONTH })
const narrow = resolvePolicy({ name: 'minute', algorithm: 'gcra', limit: 10, window: 60_000 })

describe('route of one wide policy', () => {
  test('consume, peek and timed refund: flat on the wide layout, the `wide` script shared', () => {
    expect(routeOf([wide('gcra')], true, false, 'decide')).toEqual({
      engine: 'flat',
      layout: 'wide',
      script: SCRIPTS.wide,
    })
    expect(routeOf([wide('gcra')], true, false, 'adjust')).toMatchObject({ engine: 'generic' })
    expect(routeOf([wide('gcra'), narrow], true, false, 'decide')).toMatchObject({
      engine: 'generic',
      layout: 'wide',
    })
  })

  test('its own script while the store makes them; past policyScripts, the shared one', () => {
    const planner = new Planner('0', 1)
    const first = planner.plan([wide('gcra')])
    expect(first.own?.batch.lua).toContain('ALG.gcw')
    expect(first.flat).toBe('backlog')
    const second = planner.plan([wide('token-bucket')])
    expect(second.own).toBeUndefined()
    expect(second.decide).toMatchObject({ engine: 'flat', script: SCRIPTS.wide })
  })
})

describe('one wide policy on a real Redis', () => {
  const redis = useRedisServer()
  const { connect, scriptCalls } = redis

  /** What core decides for each request in order, on its own state per key. */
  function expected(policy: Policy, requests: { key: string; cost: number; now: number }[]) {
    const transitions = algorithmOf(policy)
    const states = new Map<string, number[]>()
    const outcomes = requests.map(({ key, cost, now }) => {
      let state = states.get(key)
      if (state === undefined) {
        state = new Array<number>(transitions.slots(policy)).fill(0)
        states.set(key, state)
      }
      const out = blankOutcome()
      transitions.decide(state, 0, now, policy, cost, out)
      if (out.allowed) transitions.apply(state, 0, now, policy, cost)
      return out
    })
    return { outcomes, states }
  }

  for (const algorithm of ['gcra', 'token-bucket', 'leaky-bucket'] as const) {
    test(`${algorithm}: 64 consumes of one turn over 8 keys take 2 script calls, as core decides`, async () => {
      const policy = wide(algorithm)
      const prefix = `wf-${algorithm}`
      const store = new RedisStore({ client: connect(), time: 'client', prefix })
      await store.consume({ key: 'warm', policies: [policy], cost: 1, now: 1 })
      await redis.admin.config('RESETSTAT')
      // Costs near the burst, so that some keys run out within the batch.
      const requests = Array.from({ length: 64 }, (_, i) => ({
        key: `k${i % 8}`,
        cost: 3 * 10 ** 11 + 7 * i,
        now: 5_000_000,
      }))
      const results = await Promise.all(
        requests.map((r) => store.consume({ ...r, policies: [policy] })),
      )
      expect(await scriptCalls()).toBe(2)
      const want = expected(policy, requests)
      expect(results.map((r) => r.outcomes[0])).toEqual(want.outcomes)
      expect(want.outcomes.some((o) => !o.allowed)).toBe(true)
      for (const [key, state] of want.states) {
        expect(await redis.admin.get(`${prefix}:{${key}}:${policyKeyId(policy)}:v`)).toBe(
          state.join(','),
        )
      }
    })
  }

  test('a blocked key in a batch: refused until the block ends, nothing written', async () => {
    const policy = wide('gcra')
    const store = new RedisStore({ client: connect(), time: 'client', prefix: 'wf-block' })
    await store.block({ key: 'held', until: 5_000_000 + 700, now: 5_000_000 })
    const results = await Promise.all(
      ['held', 'free', 'held'].map((key) =>
        store.consume({ key, policies: [policy], cost: 10 ** 9, now: 5_000_000 }),
      ),
    )
    expect(results.map((r) => r.outcomes[0].allowed)).toEqual([false, true, false])
    expect(results[0].outcomes[0].retryAfterMs).toBe(700)
    expect(await redis.admin.exists(`wf-block:{held}:${policyKeyId(policy)}:v`)).toBe(0)
  })

  test('alone: a reservation, a peek and a timed refund, as core decides', async () => {
    const policy = wide('token-bucket')
    const store = new RedisStore({ client: connect(), time: 'client', prefix: 'wf-alone' })
    const transitions = algorithmOf(policy)
    const state = new Array<number>(transitions.slots(policy)).fill(0)
    const base = { key: 'one', policies: [policy] }
    // The burst taken, then a reservation that waits for a refill (about 373 a ms).
    const burst = policy.burst
    let want = blankOutcome()
    transitions.decide(state, 0, 1000, policy, burst, want)
    transitions.apply(state, 0, 1000, policy, burst)
    expect((await store.consume({ ...base, cost: burst, now: 1000 })).outcomes[0]).toEqual(want)
    want = blankOutcome()
    transitions.decide(state, 0, 2000, policy, 10 ** 7, want, 60_000)
    expect(want.allowed && want.delayMs > 0).toBe(true)
    transitions.apply(state, 0, 2000, policy, 10 ** 7)
    const reserved = await store.consume({ ...base, cost: 10 ** 7, now: 2000, maxDelayMs: 60_000 })
    expect(reserved.outcomes[0]).toEqual(want)
    // The reservation given back at the time it was made, then a peek.
    await store.refund({ ...base, cost: 10 ** 7, now: 3000, at: 2000 })
    transitions.refund(state, 0, 3000, policy, 10 ** 7, 2000)
    want = blankOutcome()
    transitions.decide(state, 0, 3000, policy, 0, want)
    expect((await store.peek({ ...base, cost: 0, now: 3000 })).outcomes[0]).toEqual(want)
    expect(await redis.admin.get(`wf-alone:{one}:${policyKeyId(policy)}:v`)).toBe(state.join(','))
  })

  test('a limiter of one wide policy answers through its own batch script', async () => {
    const limiter = createLimiter({
      store: new RedisStore({ client: connect(), blockCache: false, prefix: 'wf-limiter' }),
      algorithm: 'gcra',
      limit: 10 ** 12,
      window: '31d',
    })
    await limiter.consume('warm')
    // Emptied: what runs from here is loaded again, by EVAL after a NOSCRIPT.
    await redis.admin.script('FLUSH')
    await redis.admin.config('RESETSTAT')
    const results = await Promise.all(
      Array.from({ length: 32 }, (_, i) => limiter.consume(`u${i % 4}`, { cost: 10 ** 9 })),
    )
    // One batch (a refused EVALSHA is not counted, the EVAL that loads it is); the shared wide
    // scripts were not loaded again.
    expect(await scriptCalls()).toBe(1)
    const shared = [SCRIPTS.wide.sha, SCRIPTS['wide:batch'].sha]
    expect(await redis.admin.script('EXISTS', ...shared)).toEqual([0, 0])
    expect(results.every((r) => r.allowed)).toBe(true)
    // Eight of 10^9 from each key's 10^12.
    expect(results.slice(28).map((r) => r.remaining)).toEqual(Array(4).fill(10 ** 12 - 8 * 10 ** 9))
  })
})
