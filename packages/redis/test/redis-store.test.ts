import { once } from 'node:events'
import fc from 'fast-check'
import {
  ALGORITHMS,
  createLimiter,
  type Decision,
  type Policy,
  type PolicyOutcome,
  type StoreResult,
} from '@sluice/core'
import { resolvePolicy } from '@sluice/core/adapter'
import { escapeKey, policyKeyId, RedisStore, SCRIPTS } from '@sluice/redis'
import { plain, ReferenceModel, startRedis } from '@sluice/testkit'
import { Redis } from 'ioredis'
import { useRedisServer } from './fixtures/redis-server'

const redis = useRedisServer({ maxRetriesPerRequest: 1 })
const { connect, scriptCalls } = redis

/** Calls per command since the last CONFIG RESETSTAT, from INFO commandstats. */
async function commandCalls(): Promise<Record<string, number>> {
  const info = await redis.admin.info('commandstats')
  const calls: Record<string, number> = {}
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    calls[match[1]] = Number(match[2])
  }
  return calls
}

let keys = 0
const freshKey = (): string => `t${Date.now().toString(36)}${keys++}`

describe('scripts', () => {
  test.each(Object.entries(SCRIPTS))(
    'the %s script loads on a real server under the SHA the store computes',
    async (_name, script) => {
      expect(await redis.admin.script('LOAD', script.lua)).toBe(script.sha)
    },
  )

  test('one EVALSHA per decision, even for several policies of mixed algorithms', async () => {
    const store = new RedisStore({ client: connect() })
    const limiter = createLimiter({
      store,
      limits: [
        { algorithm: 'gcra', limit: 100, window: '1s' },
        { algorithm: 'sliding-log', limit: 100, window: '1h' },
        { algorithm: 'fixed-window', limit: 500, window: '1d' },
      ],
    })
    const key = freshKey()
    await limiter.consume(key) // first call on a connection is an EVAL that loads the script
    await redis.admin.config('RESETSTAT')
    for (let i = 0; i < 20; i++) await limiter.consume(key)
    const calls = await commandCalls()
    expect(calls.evalsha).toBe(20)
    expect(calls.eval).toBeUndefined()
    // commandstats also counts what the scripts call inside; a round trip of the store's own
    // (a GET to read state, say) would show as more calls than the scripts make.
    expect(calls.time).toBe(20)
  })

  test('after SCRIPT FLUSH (NOSCRIPT) the script is reloaded and the request counted once', async () => {
    const client = connect()
    const store = new RedisStore({ client, time: 'client' })
    const policies = [resolvePolicy({ algorithm: 'sliding-log', limit: 5, window: 60_000 })]
    const key = freshKey()
    await store.consume({ key, policies, cost: 1, now: 1000 })
    await redis.admin.script('FLUSH')
    await redis.admin.config('RESETSTAT')
    const { outcomes } = await store.consume({ key, policies, cost: 1, now: 1000 })
    expect(outcomes[0]).toMatchObject({ allowed: true, remaining: 3 })
    const calls = await commandCalls()
    expect(calls.evalsha).toBe(1) // answered NOSCRIPT
    expect(calls.eval).toBe(1) // ran once
    const stateKey = `sluice:{${key}}:${policyKeyId(policies[0])}`
    expect(await redis.admin.zcard(stateKey)).toBe(2)
  })

  test('numbers near 2^50 stay exact (no %.14g rounding in Lua)', async () => {
    const store = new RedisStore({ client: connect(), time: 'client', clockToleranceMs: 60_000 })
    const policies = [
      resolvePolicy({ algorithm: 'token-bucket', limit: 1_000_003, window: 1_000_000_000 }),
      resolvePolicy({ algorithm: 'gcra', limit: 999_983, window: 1_000_000_000, burst: 1_000_003 }),
    ]
    const model = new ReferenceModel(policies)
    const key = freshKey()
    let now = 1_700_000_000_000
    for (const [dt, cost] of [
      [0, 999_999],
      [0, 5],
      [7, 3],
      [1_000_001, 2],
      [3, 1_000_000],
      [999_999_999, 1],
    ]) {
      now += dt
      const { outcomes } = await store.consume({ key, policies, cost, now })
      expect(plain(outcomes)).toEqual(model.consume(now, cost))
    }
  })
})

describe('per-policy scripts', () => {
  test('two configurations on one client: a script each, no ARGV for a plain consume', async () => {
    const client = connect({ enableAutoPipelining: true })
    const store = new RedisStore({ client, blockCache: false })
    const small = createLimiter({ store, algorithm: 'gcra', limit: 3, window: '1h' })
    const large = createLimiter({ store, algorithm: 'gcra', limit: 5, window: '1h' })
    const key = freshKey()
    await redis.admin.script('FLUSH')
    const decisions = await Promise.all(
      Array.from({ length: 8 }, (_, i) => (i % 2 ? large : small).consume(key)),
    )
    // Each limit on its own state key, each decided by its own script.
    expect(decisions.filter((d, i) => i % 2 === 0 && d.allowed).length).toBe(3)
    expect(decisions.filter((d, i) => i % 2 === 1 && d.allowed).length).toBe(4)
    expect((await large.consume(key)).allowed).toBe(true)
    expect((await large.consume(key)).allowed).toBe(false)
    // The shared single-policy script was never needed.
    expect(await redis.admin.script('EXISTS', SCRIPTS['gcra:1'].sha)).toEqual([0])
    // A plain consume is EVALSHA <sha> 2 <key> <its block>: nothing else on the wire (once the
    // script is loaded: the consumes above went in batches, through the batch script).
    await small.consume(freshKey())
    const seen: string[][] = []
    const monitor = await connect().monitor()
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (args[0]?.toLowerCase() === 'evalsha') seen.push(args)
    })
    const fresh = freshKey()
    await small.consume(fresh)
    await new Promise((resolve) => setTimeout(resolve, 100))
    monitor.disconnect()
    expect(seen).toHaveLength(1)
    expect(seen[0].slice(2)).toEqual([
      '2',
      `sluice:{${fresh}}:${policyKeyId(small.policies[0])}`,
      `sluice:{${fresh}}:b`,
    ])
  })

  test('after SCRIPT FLUSH, 200 decisions in flight are each counted once', async () => {
    const store = new RedisStore({ client: connect({ enableAutoPipelining: true }) })
    const policies = [resolvePolicy({ algorithm: 'fixed-window', limit: 150, window: '1h' })]
    const key = freshKey()
    // Both forms loaded: the script alone, and the batch script.
    await store.consume({ key, policies, cost: 1, now: 0 })
    await Promise.all([1, 2].map(() => store.consume({ key, policies, cost: 1, now: 0 })))
    await redis.admin.script('FLUSH')
    const all = await Promise.all(
      Array.from({ length: 200 }, () => store.consume({ key, policies, cost: 1, now: 0 })),
    )
    expect(all.filter((r) => r.outcomes[0].allowed).length).toBe(147)
    await redis.admin.script('FLUSH')
    expect((await store.consume({ key, policies, cost: 1, now: 0 })).outcomes[0].allowed).toBe(
      false,
    )
    expect((await store.peek({ key, policies, cost: 0, now: 0 })).outcomes[0].remaining).toBe(0)
  })

  test('past policyScripts the shared script decides the same; 0 turns them off', async () => {
    const client = connect()
    const store = new RedisStore({ client, time: 'client', policyScripts: 1 })
    const off = new RedisStore({ client, time: 'client', policyScripts: 0 })
    const a = [resolvePolicy({ algorithm: 'token-bucket', limit: 4, window: 60_000 })]
    const b = [resolvePolicy({ algorithm: 'token-bucket', limit: 6, window: 60_000 })]
    await redis.admin.script('FLUSH')
    for (const [s, policies, expected] of [
      [store, a, 4],
      [store, b, 6],
      [off, a, 4],
    ] as const) {
      const key = freshKey()
      let admitted = 0
      for (let i = 0; i < 8; i++) {
        if ((await s.consume({ key, policies, cost: 1, now: 1000 })).outcomes[0].allowed) admitted++
      }
      expect(admitted).toBe(expected)
      // cost, peek, refund with a time and a client clock go through the same script.
      await s.refund({ key, policies, cost: 2, now: 1000, at: 1000 })
      const peek = await s.peek({ key, policies, cost: 0, now: 16_000 })
      expect(peek.outcomes[0].remaining).toBe(3)
    }
    // The second configuration (over the bound of 1) and policyScripts: 0 used the shared one.
    expect(await redis.admin.script('EXISTS', SCRIPTS['token-bucket:1'].sha)).toEqual([1])
    expect(() => new RedisStore({ client, policyScripts: -1 })).toThrow(/`policyScripts`/)
    expect(() => new RedisStore({ client, policyScripts: 1.5 })).toThrow(/`policyScripts`/)
  })
})

/** The script calls (EVAL, EVALSHA) Redis runs while `work` runs, as MONITOR sees them. */
async function scriptsDuring(work: () => Promise<unknown>): Promise<string[][]> {
  const seen: string[][] = []
  const monitor = await connect().monitor()
  monitor.on('monitor', (_time: string, args: string[]) => {
    const command = args[0]?.toLowerCase()
    if (command === 'evalsha' || command === 'eval') seen.push(args)
  })
  await work()
  // MONITOR reports asynchronously: a PING on the same server comes after every call above.
  await redis.admin.ping()
  await new Promise((resolve) => setTimeout(resolve, 50))
  monitor.disconnect()
  return seen
}

describe('batches', () => {
  test('consumes made in one turn go as one script call per batchSize, decided in order', async () => {
    const store = new RedisStore({ client: connect(), blockCache: false, batchSize: 4 })
    const limiter = createLimiter({ store, algorithm: 'fixed-window', limit: 6, window: '1h' })
    const key = freshKey()
    let decisions: Decision[] = []
    const calls = await scriptsDuring(async () => {
      decisions = await Promise.all(Array.from({ length: 10 }, () => limiter.consume(key)))
    })
    expect(decisions.map((d) => d.allowed)).toEqual([
      ...Array(6).fill(true),
      ...Array(4).fill(false),
    ])
    expect(decisions.map((d) => d.remaining)).toEqual([5, 4, 3, 2, 1, 0, 0, 0, 0, 0])
    // Three calls, with 4, 4 and 2 decisions: their state keys and <prefix>:blocks (no key is
    // blocked, so their blocks are not declared); server time and cost 1: ARGV is the empty id,
    // now and the flags: 'r', the one key comes more than once (the script holds it).
    expect(calls.map((args) => Number(args[2]))).toEqual([5, 5, 3])
    const state = `sluice:{${key}}:${policyKeyId(limiter.policies[0])}`
    expect(calls[2].slice(3)).toEqual([state, state, 'sluice:blocks', '', '', 'r'])
  })

  test("a batch's flags say whether a key repeats: '' for distinct keys, 'r' for a repeat", async () => {
    const store = new RedisStore({ client: connect(), blockCache: false })
    const limiter = createLimiter({ store, algorithm: 'gcra', limit: 6, window: '1h' })
    const [a, b, c] = [freshKey(), freshKey(), freshKey()]
    const calls = await scriptsDuring(async () => {
      await Promise.all([a, b, c].map((key) => limiter.consume(key)))
      await Promise.all([a, b, a].map((key) => limiter.consume(key)))
    })
    // ARGV[3] comes after the 3 + 1 KEYS and two ARGV.
    expect(calls.map((args) => args[3 + 4 + 2])).toEqual(['', 'r'])
  })

  test.each(['gcra', 'sliding-window', 'fixed-window'] as const)(
    "%s: a batch with a repeated key decides the same held ('r') and one by one ('')",
    async (algorithm) => {
      const store = new RedisStore({ client: connect(), blockCache: false, time: 'client' })
      const limiter = createLimiter({
        store,
        algorithm,
        limit: 3,
        window: '1h',
        clock: () => 5_000_000,
      })
      const [a, b] = [freshKey(), freshKey()]
      const turn = [a, a, b, a, a, b, a]
      // A first batch loads the batch script (EVAL), so the turn's call is an EVALSHA.
      await Promise.all([freshKey(), freshKey()].map((k) => limiter.consume(k)))
      const calls = await scriptsDuring(() => Promise.all(turn.map((k) => limiter.consume(k))))
      expect(calls).toHaveLength(1)
      const [command, sha, numkeys, ...rest] = calls[0]
      expect(command.toLowerCase()).toBe('evalsha')
      const keyCount = Number(numkeys)
      expect(rest[keyCount + 2]).toBe('r')
      // The same call on copies of the keys, with each flag: replies and state must agree. A
      // TTL read back has run down by at most the ms between the call and the read (`span`).
      const replay = async (flags: string, copy: string) => {
        const names = rest.slice(0, keyCount - 1).map((name) => `${name}:${copy}`)
        const argv = [...rest.slice(keyCount, keyCount + 2), flags, ...rest.slice(keyCount + 3)]
        const started = Date.now()
        const reply = await redis.admin.evalsha(sha, numkeys, ...names, rest[keyCount - 1], ...argv)
        const state: unknown[] = []
        const ttls: number[] = []
        for (const name of new Set(names)) {
          const type = await redis.admin.type(name)
          state.push(
            type,
            type === 'hash' ? await redis.admin.hgetall(name) : await redis.admin.get(name),
          )
          ttls.push(await redis.admin.pttl(name))
        }
        return { reply, state, ttls, span: Date.now() - started + 1 }
      }
      const held = await replay('r', 'held')
      const oneByOne = await replay('', 'alone')
      expect(oneByOne.reply).toEqual(held.reply)
      expect(oneByOne.state).toEqual(held.state)
      expect(held.reply).toHaveLength(turn.length)
      const span = Math.max(held.span, oneByOne.span)
      held.ttls.forEach((ttl, i) => {
        expect(ttl).toBeGreaterThan(0)
        expect(Math.abs(ttl - oneByOne.ttls[i])).toBeLessThanOrEqual(span)
      })
    },
  )

  test('a limiter with several limits batches through its own flat script, each decided as alone', async () => {
    const store = new RedisStore({ client: connect(), time: 'client', blockCache: false })
    const policies = [
      resolvePolicy({ algorithm: 'gcra', limit: 5, window: 60_000 }),
      resolvePolicy({ algorithm: 'sliding-window', limit: 3, window: 60_000, precision: 4 }),
    ]
    const [a, b, bad] = [freshKey(), freshKey(), freshKey()]
    // A key of the wrong type where bad's gcra state goes: its decision fails, alone.
    await redis.admin.hset(`sluice:{${bad}}:${policyKeyId(policies[0])}`, 'x', '1')
    const models = new Map([a, b].map((key) => [key, new ReferenceModel(policies)]))
    const made = [a, a, b, bad, a, a, b, a] as const
    let results: PromiseSettledResult<StoreResult>[] = []
    const calls = await scriptsDuring(async () => {
      results = await Promise.allSettled(
        made.map((key, i) => store.consume({ key, policies, cost: 1 + (i % 2), now: 1000 })),
      )
    })
    made.forEach((key, i) => {
      const result = results[i]
      if (key === bad) {
        expect(result.status).toBe('rejected')
        expect(String((result as PromiseRejectedResult).reason)).toMatch(/WRONGTYPE/)
        return
      }
      const want = (models.get(key) as ReferenceModel).consume(1000, 1 + (i % 2))
      expect(plain((result as PromiseFulfilledResult<StoreResult>).value.outcomes)).toEqual(want)
    })
    // One call, of the plan's own flat script of both (lua/flat/several.ts) in its batch form
    // (EVAL, loading it): 2 keys per decision (its states; no key is blocked, so no block key),
    // then `<prefix>:blocks`. The generic script's batch form is not used.
    expect(calls.map((args) => [args[0].toLowerCase(), Number(args[2])])).toEqual([
      ['eval', 2 * made.length + 1],
    ])
    expect(await redis.admin.script('EXISTS', SCRIPTS['mixed:batch'].sha)).toEqual([0])
  })

  test('batchSize 1 sends each alone; a consume alone goes alone anyway', async () => {
    const off = new RedisStore({ client: connect(), blockCache: false, batchSize: 1 })
    const on = new RedisStore({ client: connect(), blockCache: false })
    const policies = [resolvePolicy({ algorithm: 'gcra', limit: 10, window: '1h' })]
    const key = freshKey()
    const calls = await scriptsDuring(async () => {
      await Promise.all([1, 2, 3].map(() => off.consume({ key, policies, cost: 1, now: 0 })))
      await on.consume({ key, policies, cost: 1, now: 0 })
    })
    // Each its state key and its block.
    expect(calls.map((args) => Number(args[2]))).toEqual([2, 2, 2, 2])
    expect(() => new RedisStore({ client: redis.admin, batchSize: 0 })).toThrow(
      /`batchSize`.*got 0/,
    )
    expect(() => new RedisStore({ client: redis.admin, batchSize: 2.5 })).toThrow(
      /`batchSize`.*2\.5/,
    )
  })

  test('client time: a consume at another now starts another batch; costs travel when not all 1', async () => {
    const store = new RedisStore({ client: connect(), time: 'client', blockCache: false })
    const policies = [resolvePolicy({ algorithm: 'token-bucket', limit: 5, window: 5000 })]
    const [a, b] = [freshKey(), freshKey()]
    const model = new ReferenceModel(policies)
    const made = [
      [a, 1000, 1],
      [a, 1000, 3],
      [b, 1000, 1],
      [a, 3000, 1],
      [a, 3000, 2],
    ] as const
    let outcomes: PolicyOutcome[][] = []
    const calls = await scriptsDuring(async () => {
      const results = await Promise.all(
        made.map(([key, now, cost]) => store.consume({ key, policies, cost, now })),
      )
      outcomes = results.map((r) => plain(r.outcomes))
    })
    const other = new ReferenceModel(policies)
    const expected = made.map(([key, now, cost]) => (key === a ? model : other).consume(now, cost))
    expect(outcomes).toEqual(expected)
    expect(calls.map((args) => args.slice(2 + 1 + Number(args[2])))).toEqual([
      ['', '1000', 'r', '1', '3', '1'],
      ['', '3000', 'r', '1', '2'],
    ])
  })

  test('batches read the key blocks only while <prefix>:blocks says one may exist', async () => {
    const prefix = `bk${keys++}`
    const store = new RedisStore({ client: connect(), prefix, blockCache: false })
    const policies = [resolvePolicy({ algorithm: 'sliding-window', limit: 10, window: '1h' })]
    const [blocked, free] = [freshKey(), freshKey()]
    const together = (now: number) =>
      Promise.all(
        [blocked, free, blocked].map((key) => store.consume({ key, policies, cost: 1, now })),
      )
    const gets = async () => (await commandCalls()).get ?? 0
    // No block set: the batch's one GET-free decision per key (sliding-window keeps a hash).
    await redis.admin.config('RESETSTAT')
    await together(Date.now())
    expect(await gets()).toBe(0)
    expect(await redis.admin.exists(`${prefix}:blocks`)).toBe(0)
    // A block: the flag lives at least as long, and the batch honours the block.
    await store.block({ key: blocked, until: Date.now() + 60_000, now: Date.now() })
    expect(await redis.admin.pttl(`${prefix}:blocks`)).toBeGreaterThan(59_000)
    await redis.admin.config('RESETSTAT')
    const results = await together(Date.now())
    expect(await gets()).toBe(3)
    expect(results.map((r) => r.outcomes[0].allowed)).toEqual([false, true, false])
    expect(results[0].outcomes[0].retryAfterMs).toBeGreaterThan(59_000)
    // A shorter block later does not shorten the flag.
    await store.block({ key: free, until: Date.now() + 1000, now: Date.now() })
    expect(await redis.admin.pttl(`${prefix}:blocks`)).toBeGreaterThan(58_000)
  })

  test('a batch sent without block keys while a key is blocked decides nothing, and goes again with them', async () => {
    const prefix = `bu${keys++}`
    const policies = [resolvePolicy({ algorithm: 'gcra', limit: 10, window: '1h' })]
    const blocker = new RedisStore({ client: connect(), prefix, blockCache: false })
    const store = new RedisStore({ client: connect(), prefix, blockCache: false })
    const [blocked, free] = [freshKey(), freshKey()]
    const together = () =>
      Promise.all(
        [blocked, free, blocked].map((key) =>
          store.consume({ key, policies, cost: 1, now: Date.now() }),
        ),
      )
    await together()
    // Another store (another process) blocks a key: this one does not know.
    await blocker.block({ key: blocked, until: Date.now() + 60_000, now: Date.now() })
    let results: StoreResult[] = []
    const calls = await scriptsDuring(async () => {
      results = await together()
    })
    // The first call, without blocks, replied the flag's TTL; the second declared them.
    expect(calls.map((args) => Number(args[2]))).toEqual([4, 7])
    expect(results.map((r) => r.outcomes[0].allowed)).toEqual([false, true, false])
    expect(results.map((r) => r.outcomes[0].remaining)).toEqual([0, 8, 0])
    // The store now knows: the next batch declares them at once.
    const again = await scriptsDuring(async () => {
      await together()
    })
    expect(again.map((args) => Number(args[2]))).toEqual([7])
    // Nothing was counted twice: two admitted for `free` in all, one before and one after.
    expect(
      (await store.peek({ key: free, policies, cost: 0, now: Date.now() })).outcomes[0].remaining,
    ).toBe(7)
  })

  /** Every key of a prefix, as type, value (a hash's fields sorted) and TTL, by the key's name. */
  async function stateOf(prefix: string): Promise<Map<string, [string, unknown, number]>> {
    const state = new Map<string, [string, unknown, number]>()
    for (const name of await redis.admin.keys(`${prefix}:*`)) {
      const type = await redis.admin.type(name)
      const value =
        type === 'string'
          ? await redis.admin.get(name)
          : type === 'hash'
            ? Object.entries(await redis.admin.hgetall(name)).sort()
            : // sliding-log: the scores (members name requests, which differ between stores).
              (await redis.admin.zrange(name, 0, -1, 'WITHSCORES')).filter((_, i) => i % 2 === 1)
      state.set(name.slice(prefix.length), [type, value, await redis.admin.pttl(name)])
    }
    return state
  }

  test.each(ALGORITHMS)(
    '%s: a key repeated in a batch is decided, and left in Redis, as by the same consumes one at a time',
    async (algorithm) => {
      const steps = fc.array(
        fc.record({
          gap: fc.integer({ min: 0, max: 700 }),
          // Which of two keys each consume of the turn is for, and its cost.
          turn: fc.array(fc.tuple(fc.integer({ min: 0, max: 1 }), fc.integer({ min: 1, max: 3 })), {
            minLength: 1,
            maxLength: 8,
          }),
        }),
        { minLength: 1, maxLength: 8 },
      )
      await fc.assert(
        fc.asyncProperty(steps, fc.constantFrom(1, 2), async (trace, precision) => {
          const run = keys++
          const options = {
            algorithm,
            limit: 5,
            window: 1000,
            ...(algorithm === 'sliding-window' ? { precision } : {}),
          }
          const policies = [resolvePolicy(options)]
          const batched = new RedisStore({
            client: redis.admin,
            time: 'client',
            prefix: `hb${run}`,
          })
          const alone = new RedisStore({
            client: redis.admin,
            time: 'client',
            prefix: `ha${run}`,
            batchSize: 1,
          })
          const models = [new ReferenceModel(policies), new ReferenceModel(policies)]
          let now = 1_000_000
          for (const { gap, turn } of trace) {
            now += gap
            const together = await Promise.all(
              turn.map(([k, cost]) => batched.consume({ key: `k${k}`, policies, cost, now })),
            )
            const oneByOne: PolicyOutcome[][] = []
            for (const [k, cost] of turn) {
              oneByOne.push(
                plain((await alone.consume({ key: `k${k}`, policies, cost, now })).outcomes),
              )
            }
            const expected = turn.map(([k, cost]) => models[k].consume(now, cost))
            expect(together.map((r) => plain(r.outcomes))).toEqual(expected)
            expect(oneByOne).toEqual(expected)
          }
          const [held, sequential] = [await stateOf(`hb${run}`), await stateOf(`ha${run}`)]
          expect([...held.keys()].sort()).toEqual([...sequential.keys()].sort())
          for (const [name, [type, value, ttl]] of held) {
            const [otherType, otherValue, otherTtl] = sequential.get(name)!
            expect([type, value]).toEqual([otherType, otherValue])
            // Written moments apart in real time, with the same TTL from the same `now`.
            expect(Math.abs(ttl - otherTtl)).toBeLessThan(500)
          }
        }),
        { numRuns: 25 },
      )
    },
  )

  test.each([false, true])(
    'a decision that fails in the script fails alone; the rest of its batch is decided (auto-pipelining %s)',
    async (enableAutoPipelining) => {
      // Auto-pipelining on: full batches go through a pipeline of their own (see client/ioredis.ts).
      const store = new RedisStore({
        client: connect({ enableAutoPipelining }),
        blockCache: false,
        batchSize: 7,
      })
      const [policy] = [resolvePolicy({ algorithm: 'gcra', limit: 2, window: '1h' })]
      const [good, bad] = [freshKey(), freshKey()]
      await redis.admin.lpush(`sluice:{${bad}}:${policyKeyId(policy)}`, 'not a rate limit')
      // Failures first, in the middle, twice in a row and last.
      const order = [bad, good, bad, bad, good, good, bad]
      const results = await Promise.allSettled(
        order.map((key) => store.consume({ key, policies: [policy], cost: 1, now: 0 })),
      )
      expect(results.map((r) => r.status)).toEqual(
        order.map((key) => (key === bad ? 'rejected' : 'fulfilled')),
      )
      for (const [i, result] of results.entries()) {
        if (order[i] !== bad) continue
        expect((result as PromiseRejectedResult).reason).toEqual(
          expect.objectContaining({ message: expect.stringMatching(/WRONGTYPE/) }),
        )
      }
      const admitted = results.map((r) => r.status === 'fulfilled' && r.value.outcomes[0].allowed)
      expect(admitted).toEqual([false, true, false, false, true, false, false])
      expect(await redis.admin.lrange(`sluice:{${bad}}:${policyKeyId(policy)}`, 0, -1)).toEqual([
        'not a rate limit',
      ])
    },
  )
})

describe('keys', () => {
  test('braces in the user key cannot move the hash tag; the empty key has its own tag', () => {
    expect(escapeKey('user:42')).toBe('user:42')
    expect(escapeKey('a{b}c')).toBe('a%7Bb%7Dc')
    expect(escapeKey('}')).toBe('%7D')
    expect(escapeKey('%7D')).toBe('%257D')
    expect(escapeKey('')).toBe('%')
  })

  test('state lives under <prefix>:{<key>}:<policy key id>', async () => {
    const store = new RedisStore({ client: connect(), prefix: 'rl' })
    const limiter = createLimiter({ store, algorithm: 'gcra', limit: 10, window: '1m' })
    const key = `${freshKey()}{x}`
    await limiter.consume(key)
    expect(await redis.admin.keys(`rl:{${escapeKey(key)}}:*`)).toEqual([
      `rl:{${escapeKey(key)}}:g10/1m`,
    ])
    expect(() => new RedisStore({ client: redis.admin, prefix: 'a{b' })).toThrow(/`prefix`/)
  })

  test('policy key ids: short, one per policy id, read back one way only', () => {
    const id = (options: Parameters<typeof resolvePolicy>[0]): string =>
      policyKeyId(resolvePolicy(options))
    expect(id({ algorithm: 'gcra', limit: 100, window: '1s', burst: 6 })).toBe('g100/1sb6')
    expect(id({ algorithm: 'gcra', limit: 10, window: '1h' })).toBe('g10/1h')
    expect(id({ algorithm: 'token-bucket', limit: 5, window: 90_000 })).toBe('t5/90s')
    expect(id({ algorithm: 'leaky-bucket', limit: 2, window: 1500, burst: 3 })).toBe('l2/1500msb3')
    expect(id({ algorithm: 'fixed-window', limit: 100, window: '1m' })).toBe('f100/1m')
    expect(id({ algorithm: 'fixed-window', limit: 3, window: '1d', anchor: 'first-request' })).toBe(
      'k3/1d',
    )
    expect(id({ algorithm: 'sliding-window', limit: 7, window: '1m' })).toBe('w7/1m')
    expect(id({ algorithm: 'sliding-window', limit: 7, window: '1m', precision: 6 })).toBe(
      'w7/1mp6',
    )
    expect(id({ algorithm: 'sliding-log', limit: 2, window: 60_001 })).toBe('s2/60001ms')
    // Ids of another shape are used whole: they have a `:`, which no short id has.
    expect(policyKeyId({ id: 'custom' })).toBe('custom')
    expect(policyKeyId({ id: 'gc:10:1000' })).toBe('gc:10:1000')
    expect(policyKeyId({ id: 'fw:010:1000' })).toBe('fw:010:1000')
    // A 10-byte client key and an hour's limit: 28 bytes in all, jemalloc's 32-byte class.
    expect(
      `sluice:{u:12345678}:${id({ algorithm: 'gcra', limit: 1000, window: '1h' })}`,
    ).toHaveLength(28)
    // Distinct ids, distinct key ids (a shared one would merge two policies' counters).
    fc.assert(
      fc.property(
        fc.constantFrom(...ALGORITHMS),
        fc.constantFrom(...ALGORITHMS),
        fc.array(fc.integer({ min: 1, max: 200_000_000 }), { minLength: 8, maxLength: 8 }),
        fc.boolean(),
        (a, b, [l1, w1, x1, p1, l2, w2, x2, p2], anchor) => {
          const make = (algorithm: typeof a, limit: number, w: number, x: number, p: number) => {
            const meter = ['gcra', 'token-bucket', 'leaky-bucket'].includes(algorithm)
            const window = [1000, 60_000, 3_600_000, 86_400_000, w][w % 5]
            return resolvePolicy({
              algorithm,
              limit: limit % 1000 || 1,
              window,
              ...(meter ? { burst: x % 3 === 0 ? limit % 1000 || 1 : (x % 50) + 1 } : {}),
              // Sub-windows where the window divides into them.
              ...(algorithm === 'sliding-window' && window % [2, 4, 10][p % 3] === 0
                ? { precision: [2, 4, 10][p % 3] }
                : {}),
              ...(algorithm === 'fixed-window' && anchor
                ? { anchor: 'first-request' as const }
                : {}),
            })
          }
          const one = make(a, l1, w1, x1, p1)
          const two = make(b, l2, w2, x2, p2)
          expect(policyKeyId(one) === policyKeyId(two)).toBe(one.id === two.id)
          expect(policyKeyId(one)).not.toContain(':')
        },
      ),
      { numRuns: 2000 },
    )
  })

  test('a throttled (scaled) policy keeps its key', async () => {
    const store = new RedisStore({ client: connect() })
    const hard = createLimiter({ store, algorithm: 'fixed-window', limit: 10, window: '1h' })
    const soft = createLimiter({
      store,
      algorithm: 'fixed-window',
      limit: 10,
      window: '1h',
      throttle: { soft: 0.5 },
    })
    const key = freshKey()
    for (let i = 0; i < 10; i++) await hard.consume(key)
    // Soft admits 5 more on the same state, as core's MemoryStore does.
    const more = await Promise.all(Array.from({ length: 6 }, () => soft.consume(key)))
    expect(more.filter((d) => d.allowed).length).toBe(5)
    expect(await redis.admin.keys(`sluice:{${key}}:*`)).toEqual([`sluice:{${key}}:f10/1h`])
  })

  test('every key expires when its state is empty again, to the millisecond', async () => {
    const store = new RedisStore({ client: connect() })
    const cases: [Policy, number][] = [
      // Windows of tens of seconds: a key that lives only milliseconds could expire before a
      // loaded machine reads its TTL. Windows that are not whole seconds show the TTL is set in
      // milliseconds, not rounded up to the next second.
      [resolvePolicy({ algorithm: 'fixed-window', limit: 5, window: 30_300 }), 30_300],
      [
        resolvePolicy({ algorithm: 'sliding-window', limit: 5, window: 40_400, precision: 4 }),
        50_500,
      ],
      [resolvePolicy({ algorithm: 'sliding-log', limit: 5, window: 25_250 }), 25_250],
      // Meters need cost x window / limit ms, not the whole window.
      [resolvePolicy({ algorithm: 'token-bucket', limit: 10, window: 200_000 }), 40_000],
      [resolvePolicy({ algorithm: 'leaky-bucket', limit: 10, window: 200_000 }), 40_000],
      [resolvePolicy({ algorithm: 'gcra', limit: 10, window: 100_000, burst: 6 }), 20_000],
    ]
    for (const [policy, needed] of cases) {
      const key = freshKey()
      await store.consume({ key, policies: [policy], cost: 2, now: 0 })
      const ttl = await redis.admin.pttl(`sluice:{${key}}:${policyKeyId(policy)}`)
      expect({ algorithm: policy.algorithm, ttlInRange: ttl > 0 && ttl <= needed }).toEqual({
        algorithm: policy.algorithm,
        ttlInRange: true,
      })
    }
  })

  test('sliding-window with precision N keeps its counters in one hash', async () => {
    const store = new RedisStore({ client: connect(), time: 'client' })
    const policy = resolvePolicy({
      algorithm: 'sliding-window',
      limit: 100,
      window: 60_000,
      precision: 6,
    })
    const key = freshKey()
    for (let t = 0; t < 8; t++) {
      await store.consume({ key, policies: [policy], cost: 1, now: 1_000_000 + t * 10_000 })
    }
    const stateKey = `sluice:{${key}}:${policyKeyId(policy)}`
    expect(await redis.admin.type(stateKey)).toBe('hash')
    const fields = await redis.admin.hgetall(stateKey)
    // `n` (newest bucket) and one field per non-zero counter of the ring of 7.
    expect(Object.keys(fields).length).toBeLessThanOrEqual(8)
    expect(fields.n).toBe(String(Math.floor((1_000_000 + 70_000) / 10_000)))
  })

  test('sliding-log: simultaneous requests are separate members', async () => {
    const store = new RedisStore({ client: connect({ enableAutoPipelining: true }) })
    const policy = resolvePolicy({ algorithm: 'sliding-log', limit: 50, window: 60_000 })
    const key = freshKey()
    const now = Date.now()
    const all = await Promise.all(
      Array.from({ length: 30 }, () => store.consume({ key, policies: [policy], cost: 1, now })),
    )
    expect(all.every((r) => r.outcomes[0].allowed)).toBe(true)
    await store.consume({ key, policies: [policy], cost: 5, now })
    expect(await redis.admin.zcard(`sluice:{${key}}:${policyKeyId(policy)}`)).toBe(35)
  })

  test('memory: a gcra or fixed-window key takes under 100 bytes (MEMORY USAGE)', async () => {
    const store = new RedisStore({ client: connect() })
    const usage: Record<string, number> = {}
    for (const policy of [
      // Hour-long windows: a state that lives only milliseconds (gcra 100/s keeps its key for
      // 10-60 ms) could expire before a loaded machine gets to inspect it.
      resolvePolicy({ algorithm: 'gcra', limit: 100, window: 3_600_000, burst: 6 }),
      resolvePolicy({ algorithm: 'gcra', limit: 3, window: 3_600_000 }),
      resolvePolicy({ algorithm: 'fixed-window', limit: 100, window: 3_600_000 }),
    ]) {
      // A realistic key: an IPv4 client address.
      const key = `203.0.113.${keys++ % 250}`
      await store.reset(key, [policy])
      await store.consume({ key, policies: [policy], cost: 1, now: 0 })
      const stateKey = `sluice:{${key}}:${policyKeyId(policy)}`
      expect(await redis.admin.object('ENCODING', stateKey)).toBe('int')
      usage[policy.id] = Number(await redis.admin.memory('USAGE', stateKey))
    }
    for (const bytes of Object.values(usage)) expect(bytes).toBeLessThanOrEqual(100)
  })
})

describe('server time', () => {
  test.each([
    ['fixed-window', '1d'],
    ['sliding-log', '1h'],
    ['token-bucket', '1d'],
    ['leaky-bucket', '1d'],
    ['gcra', '1d'],
  ] as const)(
    '%s: two limiters whose clocks differ by 10 s still admit exactly the limit',
    async (algorithm, window) => {
      const store = new RedisStore({ client: connect({ enableAutoPipelining: true }) })
      const limit = 25
      const ahead = createLimiter({ store, algorithm, limit, window, clock: () => Date.now() })
      const behind = createLimiter({
        store,
        algorithm,
        limit,
        window,
        clock: () => Date.now() - 10_000,
      })
      const key = freshKey()
      const decisions = await Promise.all(
        Array.from({ length: 40 }, (_, i) => (i % 2 ? ahead : behind).consume(key)),
      )
      expect(decisions.filter((d) => d.allowed).length).toBe(limit)
    },
  )

  test('with time: client a writer behind the newest window counts in it: the skew does not over-admit', async () => {
    const store = new RedisStore({ client: connect(), time: 'client' })
    const options = { store, algorithm: 'fixed-window', limit: 5, window: '1s' } as const
    const start = 1_700_000_000_000
    const ahead = createLimiter({ ...options, clock: () => start + 10_000 })
    const behind = createLimiter({ ...options, clock: () => start })
    const key = freshKey()
    let admitted = 0
    for (let i = 0; i < 20; i++) {
      if ((await (i % 2 ? ahead : behind).consume(key)).allowed) admitted++
    }
    // The writer behind counts its first request in its own window; once the one ahead has
    // written a newer window, the one behind counts in it too (as a clock stepped back does):
    // 1 + 5, not a fresh window per writer. Retry times still differ by the skew, which is
    // why server time stays the default.
    expect(admitted).toBe(6)
  })
})

describe('client time stepped back', () => {
  test.each([
    ['one limit (its own script)', [{ algorithm: 'fixed-window', limit: 20, window: 1000 }]],
    [
      'two limits (the generic script)',
      [
        { algorithm: 'fixed-window', limit: 20, window: 1000 },
        { algorithm: 'fixed-window', limit: 100, window: 60_000 },
      ],
    ],
  ] as const)(
    'fixed-window, %s: a clock stepped back does not reopen a spent window',
    async (_name, limits) => {
      let now = 1_800_000_100_000
      const store = new RedisStore({ client: connect(), time: 'client', blockCache: false })
      const limiter = createLimiter({
        store,
        limits: limits.map((l) => ({ ...l })),
        clock: () => now,
      })
      const key = freshKey()
      const burst = async (): Promise<number> => {
        let admitted = 0
        for (let i = 0; i < 40; i++) if ((await limiter.consume(key)).allowed) admitted++
        return admitted
      }
      expect(await burst()).toBe(20)
      now -= 1000
      expect(await burst()).toBe(0)
      now -= 2000
      expect(await burst()).toBe(0)
    },
  )
})

describe('auto-pipelining', () => {
  test('1,000 decisions in flight on one connection: exactly the limit passes', async () => {
    const client = connect({ enableAutoPipelining: true })
    const store = new RedisStore({ client, blockCache: false })
    const limiter = createLimiter({ store, algorithm: 'gcra', limit: 100, window: '1h' })
    const key = freshKey()
    const decisions = await Promise.all(Array.from({ length: 1000 }, () => limiter.consume(key)))
    expect(decisions.filter((d) => d.allowed).length).toBe(100)
  })

  test('a full batch to a server that is gone fails every decision in it', async () => {
    const gone = await startRedis()
    const client = new Redis({
      host: gone.host,
      port: gone.port,
      enableAutoPipelining: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      retryStrategy: () => 25,
    })
    client.on('error', () => undefined)
    if (client.status !== 'ready') await once(client, 'ready')
    const store = new RedisStore({ client, blockCache: false, batchSize: 8 })
    const policies = [resolvePolicy({ algorithm: 'gcra', limit: 10, window: '1h' })]
    await gone.stop()
    await new Promise((resolve) => setTimeout(resolve, 100))
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, (_, i) =>
        store.consume({ key: `k${i}`, policies, cost: 1, now: Date.now() }),
      ),
    )
    expect(results.map((r) => r.status)).toEqual(Array(8).fill('rejected'))
    client.disconnect()
  })

  test('a full batch is written at once, not held until the tick ends', async () => {
    const client = connect({ enableAutoPipelining: true })
    const pipelines = jest.spyOn(client, 'pipeline')
    const store = new RedisStore({ client, blockCache: false, batchSize: 4 })
    const policies = [resolvePolicy({ algorithm: 'gcra', limit: 100, window: '1h' })]
    const key = freshKey()
    const pending = Array.from({ length: 9 }, () =>
      store.consume({ key, policies, cost: 1, now: 0 }),
    )
    // Two full batches went out as they filled (auto-pipelining would have waited for the
    // synchronous work to end); the ninth consume waits for the end of the turn.
    expect(pipelines).toHaveBeenCalledTimes(2)
    const results = await Promise.all(pending)
    expect(results.map((r) => r.outcomes[0].remaining)).toEqual([
      99, 98, 97, 96, 95, 94, 93, 92, 91,
    ])
    pipelines.mockRestore()
  })
})

describe('block cache', () => {
  test('a flood from a few keys is answered locally once they are over the limit', async () => {
    const flood = async (store: RedisStore): Promise<number> => {
      const limiter = createLimiter({ store, algorithm: 'fixed-window', limit: 10, window: '1h' })
      const hot = [freshKey(), freshKey(), freshKey()]
      await redis.admin.config('RESETSTAT')
      let admitted = 0
      for (let i = 0; i < 300; i++) {
        if ((await limiter.consume(hot[i % 3])).allowed) admitted++
      }
      expect(admitted).toBe(30)
      return scriptCalls()
    }
    const cached = await flood(new RedisStore({ client: connect() }))
    const uncached = await flood(new RedisStore({ client: connect(), blockCache: false }))
    expect(uncached).toBe(300)
    // Ten admitted and one rejected per key reach Redis; the other 267 do not.
    expect(cached).toBe(33)
  })

  test('a cached sliding-window rejection tells what Redis would, as its newest requests begin to fade', async () => {
    const policies = [
      resolvePolicy({ algorithm: 'sliding-window', limit: 1, window: 500, precision: 2 }),
    ]
    const answers = async (store: RedisStore) => {
      const key = freshKey()
      const at = (now: number) => store.consume({ key, policies, cost: 1, now })
      await at(10_003_196) // admitted into bucket 40012 (250 ms buckets)
      await at(10_003_196) // rejected: cached
      // 304 ms on, bucket 40012 is about to fade: its reset counts down to it and stays there.
      return [plain((await at(10_003_500)).outcomes), plain((await at(10_003_501)).outcomes)]
    }
    const client = connect()
    const cached = await answers(
      new RedisStore({ client, time: 'client', clockToleranceMs: 60_000 }),
    )
    const uncached = await answers(
      new RedisStore({ client, time: 'client', clockToleranceMs: 60_000, blockCache: false }),
    )
    expect(cached).toEqual(uncached)
    expect(uncached[0]).toEqual([
      { allowed: false, remaining: 0, resetMs: 0, retryAfterMs: 1, delayMs: 0 },
    ])
  })

  test('cached answers with server time are whole ms (the local clock is fractional)', async () => {
    const store = new RedisStore({ client: connect() })
    const limiter = createLimiter({ store, algorithm: 'gcra', limit: 1, window: '1h' })
    const key = freshKey()
    await limiter.consume(key)
    const seen: number[] = []
    for (let i = 0; i < 20; i++) {
      await new Promise((resolve) => setTimeout(resolve, 1))
      const decision = await limiter.consume(key)
      seen.push(decision.retryAfterMs, decision.resetMs)
    }
    expect(store.blockedKeys).toBe(1)
    expect(seen.filter((ms) => !Number.isInteger(ms))).toEqual([])
  })

  test('cached answers are what Redis would say, counting down', async () => {
    const client = connect()
    const store = new RedisStore({ client, time: 'client' })
    const reference = new RedisStore({ client, time: 'client', blockCache: false })
    const policies = [
      resolvePolicy({ algorithm: 'gcra', limit: 2, window: 1000 }),
      resolvePolicy({ algorithm: 'sliding-window', limit: 2, window: 1000 }),
    ]
    const key = freshKey()
    await store.consume({ key, policies, cost: 2, now: 10_000 })
    const first = await store.consume({ key, policies, cost: 1, now: 10_000 })
    expect(first.outcomes.map((o) => o.allowed)).toEqual([false, false])
    expect(store.blockedKeys).toBe(1)
    // gcra says retry in 500 ms, sliding-window in 1001: cached until the sooner.
    for (const now of [10_001, 10_200, 10_499]) {
      await redis.admin.config('RESETSTAT')
      const cached = await store.consume({ key, policies, cost: 1, now })
      expect(await scriptCalls()).toBe(0)
      const truth = await reference.peek({ key, policies, cost: 1, now })
      expect(plain(cached.outcomes)).toEqual(plain(truth.outcomes))
    }
    // The soonest retry time has come: back to Redis.
    await redis.admin.config('RESETSTAT')
    await store.consume({ key, policies, cost: 1, now: 10_500 })
    expect(await scriptCalls()).toBe(1)
  })

  test('a changed limit, a refund or a reset is never answered from the cache', async () => {
    const store = new RedisStore({ client: connect(), time: 'client' })
    const tight = [resolvePolicy({ algorithm: 'fixed-window', limit: 1, window: 60_000 })]
    const soft = [{ ...tight[0], limit: 2, burst: 2 }] // same id, as soft throttling makes it
    const key = freshKey()
    await store.consume({ key, policies: tight, cost: 1, now: 0 })
    expect(
      (await store.consume({ key, policies: tight, cost: 1, now: 1 })).outcomes[0].allowed,
    ).toBe(false)
    expect(
      (await store.consume({ key, policies: soft, cost: 1, now: 2 })).outcomes[0].allowed,
    ).toBe(true)
    expect(
      (await store.consume({ key, policies: tight, cost: 1, now: 3 })).outcomes[0].allowed,
    ).toBe(false)
    await store.refund({ key, policies: tight, cost: 2, now: 4, at: 0 })
    expect(
      (await store.consume({ key, policies: tight, cost: 1, now: 5 })).outcomes[0].allowed,
    ).toBe(true)
    expect(
      (await store.consume({ key, policies: tight, cost: 1, now: 6 })).outcomes[0].allowed,
    ).toBe(false)
    await store.reset(key, tight)
    expect(
      (await store.consume({ key, policies: tight, cost: 1, now: 7 })).outcomes[0].allowed,
    ).toBe(true)
  })

  test('a blocked key is answered locally until the block ends; block, reset and a reservation clear it', async () => {
    const client = connect()
    const store = new RedisStore({ client, time: 'client' })
    const reference = new RedisStore({ client, time: 'client', blockCache: false })
    const policies = [resolvePolicy({ algorithm: 'gcra', limit: 10, window: 1000, burst: 1 })]
    const key = freshKey()
    await store.block({ key, until: 20_000, now: 10_000 })
    const first = await store.consume({ key, policies, cost: 1, now: 10_000 })
    expect(first.outcomes[0]).toMatchObject({ allowed: false, retryAfterMs: 10_000 })
    for (const now of [10_001, 15_000, 19_999]) {
      await redis.admin.config('RESETSTAT')
      const cached = await store.consume({ key, policies, cost: 1, now })
      expect(await scriptCalls()).toBe(0)
      expect(plain(cached.outcomes)).toEqual(
        plain((await reference.peek({ key, policies, cost: 1, now })).outcomes),
      )
    }
    // Lifted early (until <= now): the next request goes to Redis and passes.
    await store.block({ key, until: 0, now: 19_999 })
    expect((await store.consume({ key, policies, cost: 1, now: 19_999 })).outcomes[0].allowed).toBe(
      true,
    )
    // Over the limit (cached), then blocked for longer: the block's answer, not the cached one.
    expect(
      (await store.consume({ key, policies, cost: 1, now: 19_999 })).outcomes[0],
    ).toMatchObject({ allowed: false, retryAfterMs: 100 })
    await store.block({ key, until: 80_000, now: 20_000 })
    expect(
      (await store.consume({ key, policies, cost: 1, now: 20_000 })).outcomes[0],
    ).toMatchObject({ allowed: false, retryAfterMs: 60_000 })
    await store.reset(key, policies)
    expect((await store.consume({ key, policies, cost: 1, now: 20_000 })).outcomes[0].allowed).toBe(
      true,
    )
    // Cached as over the limit; a reservation is admitted by Redis and clears the entry.
    expect((await store.consume({ key, policies, cost: 1, now: 20_000 })).outcomes[0].allowed).toBe(
      false,
    )
    const reserved = await store.consume({ key, policies, cost: 1, now: 20_000, maxDelayMs: 500 })
    expect(reserved.outcomes[0]).toMatchObject({ allowed: true, delayMs: 100 })
    const after = await store.consume({ key, policies, cost: 1, now: 20_001 })
    expect(plain(after.outcomes)).toEqual(
      plain((await reference.peek({ key, policies, cost: 1, now: 20_001 })).outcomes),
    )
  })

  test('penalize, reward and block are one round trip each; the block key is <prefix>:{<key>}:b', async () => {
    const store = new RedisStore({ client: connect(), time: 'client', blockCache: false })
    const policies = [
      resolvePolicy({ algorithm: 'sliding-log', limit: 3, window: 60_000, name: 'a' }),
      resolvePolicy({ algorithm: 'fixed-window', limit: 5, window: 60_000, name: 'b' }),
    ]
    const key = freshKey()
    await redis.admin.config('RESETSTAT')
    await store.penalize({ key, policies, cost: 4, now: 1000 })
    await store.refund({ key, policies, cost: 1, now: 1000 })
    await store.block({ key, until: 5000, now: 1000 })
    expect(await scriptCalls()).toBe(3)
    expect(await redis.admin.exists(`sluice:{${escapeKey(key)}}:b`)).toBe(1)
    const look = await store.peek({ key, policies, cost: 0, now: 5000 })
    expect(look.outcomes.map((o) => o.remaining)).toEqual([1, 2])
    // Per-policy state keys go between the tag and the policy id, escaped (`:` too).
    await store.consume({ key, keys: ['r:1', 'u{2}'], policies, cost: 1, now: 5000 })
    expect((await redis.admin.keys(`sluice:{${escapeKey(key)}}:*`)).sort()).toEqual(
      [
        `sluice:{${escapeKey(key)}}:b`,
        `sluice:{${escapeKey(key)}}:${policyKeyId(policies[0])}`,
        `sluice:{${escapeKey(key)}}:${policyKeyId(policies[1])}`,
        `sluice:{${escapeKey(key)}}:r%3A1:${policyKeyId(policies[0])}`,
        `sluice:{${escapeKey(key)}}:u%7B2%7D:${policyKeyId(policies[1])}`,
      ].sort(),
    )
  })

  test('is bounded: the least recently used key goes first', async () => {
    const store = new RedisStore({ client: connect(), time: 'client', blockCache: { maxKeys: 2 } })
    const policies = [resolvePolicy({ algorithm: 'fixed-window', limit: 1, window: 60_000 })]
    const [a, b, c] = [freshKey(), freshKey(), freshKey()]
    for (const key of [a, b, a, c]) {
      await store.consume({ key, policies, cost: 1, now: 0 })
      await store.consume({ key, policies, cost: 1, now: 0 })
    }
    expect(store.blockedKeys).toBe(2)
    await redis.admin.config('RESETSTAT')
    await store.consume({ key: a, policies, cost: 1, now: 1 })
    await store.consume({ key: c, policies, cost: 1, now: 1 })
    expect(await scriptCalls()).toBe(0)
    await store.consume({ key: b, policies, cost: 1, now: 1 })
    expect(await scriptCalls()).toBe(1)
  })
})
