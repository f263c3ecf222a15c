/**
 * What Sluice adds under @nestjs/throttler's shapes (several limits, cost, a shared store,
 * onStoreError, shadow mode), and a user's own ThrottlerStorage used as it is (the GraphQL and
 * WebSocket recipes run in graphql.test.ts and websockets.test.ts).
 */
import { Controller, Get, type ExecutionContext } from '@nestjs/common'
import { MemoryStore, type DecisionEvent } from '@sluice/core'
import { FailingStore } from '@sluice/testkit'
import {
  minutes,
  seconds,
  ThrottlerModule,
  ThrottlerStorage,
  type ThrottlerStorageRecord,
} from '@sluice/nest'
import { createHash } from 'node:crypto'
import { appGuard, boot, manualClock, PLATFORMS, RootController } from './helpers'

@Controller()
class HeavyController {
  @Get('heavy')
  heavy() {
    return { ok: true }
  }
}

describe.each(PLATFORMS)('Nest + %s: Sluice under the throttler', (platform) => {
  test('limits: a second limit in the same all-or-nothing call; cost from the context', async () => {
    const clock = manualClock()
    const throttlers = [
      {
        limit: 3,
        ttl: seconds(1),
        limits: [{ limit: 4, window: minutes(1) }],
        cost: (context: ExecutionContext) => (context.getHandler().name === 'heavy' ? 2 : 1),
      },
    ]
    const { agent } = await boot(platform, {
      imports: [ThrottlerModule.forRoot({ throttlers, clock: clock.read })],
      controllers: [HeavyController],
      providers: [appGuard],
    })
    await agent.get('/heavy').expect(200) // 2 of 3 per second, 2 of 4 per minute
    // Would be 4 of 3 per second: refused, nothing taken, blocked for the ttl (1 s).
    await agent.get('/heavy').expect(429)
    clock.now += 1000
    // The block does not forgive the minute's count: 4 of 4 per minute now.
    const res = await agent.get('/heavy').expect(200)
    expect(res.headers['x-ratelimit-remaining']).toBe('0')
    expect(res.headers['x-ratelimit-limit']).toBe('4') // the binding limit fills the headers
    clock.now += 1000
    await agent.get('/heavy').expect(429) // 6 of 4 per minute
  })

  test('the default algorithm: an exact log up to a limit of 100, two counters above', async () => {
    // A request of the whole limit, then one more exactly one window later: the log has let the
    // first go; sliding-window's estimate still weighs the previous window in full.
    for (const [limit, later] of [
      [100, 200],
      [101, 429],
    ]) {
      const clock = manualClock()
      const throttlers = [{ limit, ttl: seconds(60), cost: limit }]
      const { agent } = await boot(platform, {
        imports: [ThrottlerModule.forRoot({ throttlers, clock: clock.read })],
        controllers: [RootController],
        providers: [appGuard],
      })
      await agent.get('/').expect(200)
      clock.now += seconds(60)
      await agent.get('/').expect(later)
    }
  })

  test('a Sluice store shared by two apps counts their requests together', async () => {
    const store = new MemoryStore()
    const metadata = {
      imports: [ThrottlerModule.forRoot({ throttlers: [{ limit: 2, ttl: seconds(60) }], store })],
      controllers: [RootController],
      providers: [appGuard],
    }
    const one = await boot(platform, metadata)
    const two = await boot(platform, metadata)
    await one.agent.get('/').expect(200)
    await two.agent.get('/').expect(200)
    await one.agent.get('/').expect(429)
  })

  test("onStoreError: 'throw' answers 500, 'allow' passes every request", async () => {
    const metadata = (onStoreError?: 'allow') => ({
      imports: [
        ThrottlerModule.forRoot({
          throttlers: [{ limit: 1, ttl: seconds(60) }],
          store: new FailingStore(),
          onStoreError,
          logger: { warn: () => {} },
        }),
      ],
      controllers: [RootController],
      providers: [appGuard],
    })
    await (await boot(platform, metadata())).agent.get('/').expect(500)
    const { agent } = await boot(platform, metadata('allow'))
    await agent.get('/').expect(200)
    await agent.get('/').expect(200)
  })

  test('a block the store fails to place: refused by the count, unless onStoreError is throw', async () => {
    /** Counts, then fails as the guard places the block (a store that went away in between). */
    class BlockFailingStore extends MemoryStore {
      override reset(): Promise<void> {
        return Promise.reject(new Error('ETIMEDOUT reset'))
      }
      override block(): Promise<void> {
        return Promise.reject(new Error('ETIMEDOUT block'))
      }
    }
    const warnings: string[] = []
    const metadata = (onStoreError?: 'allow' | 'deny') => ({
      imports: [
        ThrottlerModule.forRoot({
          throttlers: [{ limit: 1, ttl: seconds(60) }],
          store: new BlockFailingStore(),
          onStoreError,
          logger: { warn: (message: string) => void warnings.push(message) },
        }),
      ],
      controllers: [RootController],
      providers: [appGuard],
    })
    for (const mode of ['allow', 'deny'] as const) {
      warnings.length = 0
      const { agent } = await boot(platform, metadata(mode))
      await agent.get('/').expect(200)
      const refused = await agent.get('/').expect(429)
      expect(refused.headers['retry-after']).toBe('60')
      await agent.get('/').expect(429)
      expect(warnings).toEqual([
        expect.stringContaining('the block of key'),
        expect.stringContaining('the block of key'),
      ])
      expect(warnings[0]).toContain('ETIMEDOUT reset')
    }
    const { agent } = await boot(platform, metadata())
    await agent.get('/').expect(200)
    await agent.get('/').expect(500)
  })

  test('shadow: never refuses, and reports what enforcing would have answered', async () => {
    const events: DecisionEvent[] = []
    const { agent } = await boot(platform, {
      imports: [
        ThrottlerModule.forRoot({
          throttlers: [{ limit: 1, ttl: seconds(60), shadow: true }],
          onDecision: (event) => void events.push(event),
        }),
      ],
      controllers: [RootController],
      providers: [appGuard],
    })
    for (let i = 0; i < 3; i++) await agent.get('/').expect(200)
    expect(events.map((event) => [event.shadow, event.allowed])).toEqual([
      [true, true],
      [true, false],
      [true, false],
    ])
  })

  test('a custom ThrottlerStorage is used as it is, with the default key (sha256)', async () => {
    const calls: unknown[][] = []
    class CountingStorage implements ThrottlerStorage {
      private readonly hits = new Map<string, number>()
      async increment(key: string, ttl: number, limit: number, block: number, name: string) {
        calls.push([key, ttl, limit, block, name])
        const totalHits = (this.hits.get(key) ?? 0) + 1
        this.hits.set(key, totalHits)
        const isBlocked = totalHits > limit
        const record: ThrottlerStorageRecord = {
          totalHits,
          timeToExpire: 42,
          isBlocked,
          timeToBlockExpire: isBlocked ? 7 : 0,
        }
        return record
      }
    }
    const { agent } = await boot(platform, {
      imports: [
        ThrottlerModule.forRoot({
          throttlers: [{ name: 'burst', limit: 1, ttl: seconds(5), blockDuration: seconds(9) }],
          storage: new CountingStorage(),
        }),
      ],
      controllers: [RootController],
      providers: [appGuard],
    })
    const res = await agent.get('/').expect(200)
    expect(res.headers['x-ratelimit-remaining-burst']).toBe('0')
    expect(res.headers['x-ratelimit-reset-burst']).toBe('42')
    expect((await agent.get('/').expect(429)).headers['retry-after-burst']).toBe('7')
    const key = createHash('sha256').update('RootController-root-burst-127.0.0.1').digest('hex')
    expect(calls).toEqual([
      [key, 5000, 1, 9000, 'burst'],
      [key, 5000, 1, 9000, 'burst'],
    ])
  })
})
