import { createLimiter, localTier, type Decision, type Store } from '@sluice/core'
import { RedisStore, type RedisStoreOptions } from '@sluice/redis'
import { storeSettled } from '@sluice/testkit'
import { oneRedis } from './one-redis'

// Redis hangs (SIGSTOP) while requests are answered by onStoreError 'deny', then resumes
// (SIGCONT) and runs the consumes that timed out. On Redis's own clock (time: 'server') a late
// charge happened at a time the app never saw: its refund must remove exactly that charge,
// whatever the algorithm keeps (a sliding log keeps one timestamp per unit).
const TIMEOUT_MS = 100

const live = oneRedis()

afterEach(() => live.server.resume())

const LAYOUTS: readonly [string, Partial<RedisStoreOptions>][] = [
  ['keys of their own', {}],
  ['packed', { packed: { groups: 16 } }],
]

const ALGORITHMS = [
  'sliding-log',
  'sliding-window',
  'fixed-window',
  'token-bucket',
  'gcra',
] as const

/** Each algorithm alone (its flat script), and a log beside a window (the generic script). */
const LIMITS: readonly [string, Record<string, unknown>][] = [
  ...ALGORITHMS.map((algorithm): [string, Record<string, unknown>] => [
    algorithm,
    { algorithm, limit: 10, window: '1h' },
  ]),
  [
    'sliding-log beside fixed-window',
    {
      limits: [
        { algorithm: 'sliding-log', limit: 10, window: '1h' },
        { algorithm: 'fixed-window', limit: 100, window: '1h' },
      ],
    },
  ],
]

/** Consumes `n` one after another and writes Y (admitted) or n (refused) for each. */
async function pattern(consume: () => Promise<Decision>, n: number): Promise<string> {
  let out = ''
  for (let i = 0; i < n; i++) out += (await consume()).allowed ? 'Y' : 'n'
  return out
}

describe.each(LAYOUTS)('time: server, %s', (_layout, layout) => {
  describe.each([false, true])('local tier %s', (tiered) => {
    test.each(LIMITS)(
      '%s: requests denied during a hang are never charged (exact count after recovery)',
      async (name, limits) => {
        const redis = new RedisStore({
          client: live.client,
          blockCache: false,
          time: 'server',
          ...layout,
        })
        const store: Store = tiered ? localTier(redis) : redis
        const settings = {
          ...limits,
          onStoreError: 'deny',
          breaker: false,
          logger: { warn: () => {} },
        } as const
        const limiter = createLimiter({ store, ...settings, timeoutMs: TIMEOUT_MS })
        // Counts before and after the hang within a timeout no loaded machine reaches: a count
        // answered by onStoreError there would put the exact figures off.
        const patient = createLimiter({ store, ...settings, timeoutMs: 10_000 })
        const key = `late:${name}:${String(tiered)}:${Date.now()}`
        expect(await pattern(() => patient.consume(key), 3)).toBe('YYY')

        live.server.pause()
        const during = await Promise.all(Array.from({ length: 6 }, () => limiter.consume(key)))
        expect(during.every((d) => d.degraded && !d.allowed)).toBe(true)
        live.server.resume()
        await storeSettled(store)

        // The store admitted 3: 7 more pass, the 8th is refused.
        expect(await pattern(() => patient.consume(key), 8)).toBe('YYYYYYYn')
        if (tiered) await (store as ReturnType<typeof localTier>).close()
        // What Redis itself holds: 10 counted, nothing more.
        const direct = createLimiter({ store: redis, ...limits, breaker: false })
        expect((await direct.peek(key)).remaining).toBe(0)
      },
    )
  })
})

describe.each(LAYOUTS)('time: server, %s, local tier', (_layout, layout) => {
  test('a wide sliding log (1e5 per 31 d): leases and late charges leave exactly what Redis admitted', async () => {
    const redis = new RedisStore({ client: live.client, blockCache: false, ...layout })
    const tier = localTier(redis)
    const limits = { algorithm: 'sliding-log', limit: 100_000, window: '31d' } as const
    const limiter = createLimiter({
      store: tier,
      ...limits,
      timeoutMs: TIMEOUT_MS,
      onStoreError: 'deny',
      breaker: false,
      logger: { warn: () => {} },
    })
    const key = `late-wide:${Date.now()}`
    // Leases of 1, 2, 4, ... 64: 127 units taken, 85 spent.
    expect(await pattern(() => limiter.consume(key), 85)).toBe('Y'.repeat(85))
    // The lease runs out during the hang: the next one is asked for and answered late.
    live.server.pause()
    const during = await Promise.all(Array.from({ length: 60 }, () => limiter.consume(key)))
    live.server.resume()
    const answered = during.filter((d) => !d.degraded).length
    expect(during.every((d) => d.allowed === !d.degraded)).toBe(true)
    await storeSettled(tier)
    await tier.close()
    const direct = createLimiter({ store: redis, ...limits, breaker: false })
    expect((await direct.peek(key)).remaining).toBe(100_000 - 85 - answered)
  })
})
