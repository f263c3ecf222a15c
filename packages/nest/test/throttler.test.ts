/**
 * @nestjs/throttler's behaviour, on Nest + Express and Nest + Fastify: the module's two forms,
 * the guard as APP_GUARD, per controller and per route, the decorators, headers with their
 * per-throttler suffixes, the 429, blocks, and the module's common options.
 */
import { Controller, Get, Injectable, Module, UseGuards } from '@nestjs/common'
import {
  SkipThrottle,
  seconds,
  Throttle,
  ThrottlerGuard,
  ThrottlerModule,
  type ThrottlerModuleOptions,
  type ThrottlerOptionsFactory,
} from '@sluice/nest'
import { APP_GUARD } from '@nestjs/core'
import { appGuard, boot, manualClock, PLATFORMS } from './helpers'

@Controller()
class RootController {
  @Get()
  root() {
    return { ok: true }
  }

  @SkipThrottle({ short: true })
  @Get('skip-short')
  skipShort() {
    return { ok: true }
  }

  @SkipThrottle()
  @Get('skip')
  skip() {
    return { ok: true }
  }
}

@Throttle({ default: { limit: 3, ttl: seconds(30) } })
@Controller('limited')
class LimitedController {
  @Get()
  byClass() {
    return { ok: true }
  }

  @Throttle({ default: { limit: 1, ttl: seconds(10), blockDuration: seconds(2) } })
  @Get('route')
  byRoute() {
    return { ok: true }
  }
}

/** One handler, inherited by two controllers whose own @Throttle differ. */
@Controller()
class SharedRoutes {
  @Get()
  shared() {
    return { ok: true }
  }
}
@Throttle({ default: { limit: 2, ttl: seconds(20) } })
@Controller('two')
class TwoController extends SharedRoutes {}
@Throttle({ default: { limit: 5, ttl: seconds(50) } })
@Controller('five')
class FiveController extends SharedRoutes {}

describe.each(PLATFORMS)('Nest + %s: ThrottlerModule and ThrottlerGuard', (platform) => {
  test('headers on admitted requests; the 429 body, Retry-After; a block, then a fresh count', async () => {
    const clock = manualClock()
    const throttlers = [{ limit: 2, ttl: seconds(10), blockDuration: seconds(5) }]
    const { agent } = await boot(platform, {
      imports: [ThrottlerModule.forRoot({ throttlers, clock: clock.read })],
      controllers: [RootController],
      providers: [appGuard],
    })
    for (const remaining of ['1', '0']) {
      const res = await agent.get('/').expect(200)
      expect(res.headers['x-ratelimit-limit']).toBe('2')
      expect(res.headers['x-ratelimit-remaining']).toBe(remaining)
      expect(res.headers['x-ratelimit-reset']).toBe('10')
    }
    const refused = await agent.get('/').expect(429)
    expect(refused.body).toEqual({
      statusCode: 429,
      message: 'ThrottlerException: Too Many Requests',
    })
    expect(refused.headers['retry-after']).toBe('5')
    expect(refused.headers['x-ratelimit-limit']).toBeUndefined()
    clock.now += 4000
    // Still blocked: not counted, and the block is not extended.
    expect((await agent.get('/').expect(429)).headers['retry-after']).toBe('1')
    clock.now += 1000
    // The block is over before the 10 s window: the count starts afresh, as @nestjs/throttler's.
    const fresh = await agent.get('/').expect(200)
    expect(fresh.headers['x-ratelimit-remaining']).toBe('1')
  })

  test('named throttlers: suffixed headers, shortest first, @SkipThrottle by name', async () => {
    const clock = manualClock()
    const { agent } = await boot(platform, {
      imports: [
        ThrottlerModule.forRoot({
          throttlers: [
            { limit: 3, ttl: seconds(60) },
            { name: 'short', limit: 1, ttl: seconds(1) },
          ],
          clock: clock.read,
        }),
      ],
      controllers: [RootController],
      providers: [appGuard],
    })
    const first = await agent.get('/').expect(200)
    expect(first.headers['x-ratelimit-limit-short']).toBe('1')
    expect(first.headers['x-ratelimit-remaining-short']).toBe('0')
    expect(first.headers['x-ratelimit-limit']).toBe('3')
    expect(first.headers['x-ratelimit-remaining']).toBe('2')
    const refused = await agent.get('/').expect(429)
    expect(refused.headers['retry-after-short']).toBe('1')
    expect(refused.headers['retry-after']).toBeUndefined()
    clock.now += 1000
    // The short throttler refused first, so the long one did not count that request.
    expect((await agent.get('/').expect(200)).headers['x-ratelimit-remaining']).toBe('1')
    const skipped = await agent.get('/skip-short').expect(200)
    expect(skipped.headers['x-ratelimit-limit-short']).toBeUndefined()
    expect(skipped.headers['x-ratelimit-remaining']).toBe('2')
    const none = await agent.get('/skip').expect(200)
    expect(none.headers['x-ratelimit-remaining-short']).toBe('0')
    expect(none.headers['x-ratelimit-remaining']).toBeUndefined()
  })

  test('named throttlers of one limit and ttl count apart, even keyed without their name', async () => {
    const { agent } = await boot(platform, {
      imports: [
        ThrottlerModule.forRoot({
          // A common recipe: one count per client across routes, the name left out of the key.
          generateKey: (_context, tracker) => tracker,
          throttlers: [
            { name: 'burst', limit: 3, ttl: seconds(60) },
            { name: 'sustained', limit: 3, ttl: seconds(60) },
          ],
        }),
      ],
      controllers: [RootController],
      providers: [appGuard],
    })
    const remaining: string[][] = []
    for (let i = 0; i < 3; i++) {
      const { headers } = await agent.get('/').expect(200)
      remaining.push([
        headers['x-ratelimit-remaining-burst'],
        headers['x-ratelimit-remaining-sustained'],
      ])
    }
    expect(remaining).toEqual([
      ['2', '2'],
      ['1', '1'],
      ['0', '0'],
    ])
    await agent.get('/').expect(429)
  })

  test('@Throttle on a controller, overridden on a route; keys per route', async () => {
    const clock = manualClock()
    const { agent } = await boot(platform, {
      imports: [
        ThrottlerModule.forRoot({
          throttlers: [{ limit: 10, ttl: seconds(60) }],
          clock: clock.read,
        }),
      ],
      controllers: [LimitedController],
      providers: [appGuard],
    })
    const byClass = await agent.get('/limited').expect(200)
    expect(byClass.headers['x-ratelimit-limit']).toBe('3')
    expect(byClass.headers['x-ratelimit-reset']).toBe('30')
    await agent.get('/limited/route').expect(200)
    const refused = await agent.get('/limited/route').expect(429)
    expect(refused.headers['retry-after']).toBe('2')
    // Another route of the same client has a bucket of its own.
    expect((await agent.get('/limited').expect(200)).headers['x-ratelimit-remaining']).toBe('1')
  })

  test("an inherited handler keeps each controller's own @Throttle, request after request", async () => {
    const { agent } = await boot(platform, {
      imports: [ThrottlerModule.forRoot([{ limit: 10, ttl: seconds(60) }])],
      controllers: [TwoController, FiveController],
      providers: [appGuard],
    })
    for (const [path, limit, reset] of [
      ['/two', '2', '20'],
      ['/five', '5', '50'],
      ['/two', '2', '20'],
      ['/five', '5', '50'],
    ]) {
      const response = await agent.get(path).expect(200)
      expect([
        response.headers['x-ratelimit-limit'],
        response.headers['x-ratelimit-reset'],
      ]).toEqual([limit, reset])
    }
    await agent.get('/two').expect(429)
    await agent.get('/five').expect(200)
  })

  test('@SkipThrottle() on a controller, undone on a route with { default: false }', async () => {
    @SkipThrottle()
    @Controller('mostly-open')
    class MostlyOpen {
      @Get()
      open() {
        return { ok: true }
      }

      @SkipThrottle({ default: false })
      @Get('limited')
      limited() {
        return { ok: true }
      }
    }
    const { agent } = await boot(platform, {
      imports: [ThrottlerModule.forRoot([{ limit: 1, ttl: seconds(60) }])],
      controllers: [MostlyOpen],
      providers: [appGuard],
    })
    await agent.get('/mostly-open').expect(200)
    await agent.get('/mostly-open').expect(200)
    await agent.get('/mostly-open/limited').expect(200)
    await agent.get('/mostly-open/limited').expect(429)
  })

  test('the guard per controller (@UseGuards) and per route', async () => {
    @UseGuards(ThrottlerGuard)
    @Controller('guarded')
    class Guarded {
      @Get()
      all() {
        return { ok: true }
      }
    }
    @Controller('open')
    class Open {
      @Get()
      free() {
        return { ok: true }
      }

      @UseGuards(ThrottlerGuard)
      @Get('one')
      one() {
        return { ok: true }
      }
    }
    const { agent } = await boot(platform, {
      imports: [ThrottlerModule.forRoot([{ limit: 1, ttl: seconds(60) }])],
      controllers: [Guarded, Open],
    })
    await agent.get('/guarded').expect(200)
    await agent.get('/guarded').expect(429)
    await agent.get('/open/one').expect(200)
    await agent.get('/open/one').expect(429)
    const free = await agent.get('/open').expect(200)
    await agent.get('/open').expect(200)
    expect(free.headers['x-ratelimit-limit']).toBeUndefined()
  })

  test('a subclass overriding getTracker (docs: signed-in users by id, others by IP)', async () => {
    @Injectable()
    class UserThrottlerGuard extends ThrottlerGuard {
      protected override async getTracker(req: {
        ip: string
        headers: Record<string, string | undefined>
      }): Promise<string> {
        return req.headers['x-user'] ?? req.ip
      }
    }
    const { agent } = await boot(platform, {
      imports: [ThrottlerModule.forRoot([{ limit: 1, ttl: seconds(60) }])],
      controllers: [RootController],
      providers: [{ provide: APP_GUARD, useClass: UserThrottlerGuard }],
    })
    await agent.get('/').set('x-user', 'ada').expect(200)
    await agent.get('/').set('x-user', 'ada').expect(429)
    await agent.get('/').set('x-user', 'grace').expect(200)
    await agent.get('/').expect(200) // by IP: a bucket of its own
    await agent.get('/').expect(429)
  })

  test('a guard that only watches (its throwThrottlingException returns): every header is still sent', async () => {
    const refusals: number[] = []
    @Injectable()
    class WatchingGuard extends ThrottlerGuard {
      protected override async throwThrottlingException(): Promise<void> {
        refusals.push(refusals.length + 1)
      }
    }
    const { agent } = await boot(platform, {
      imports: [ThrottlerModule.forRoot([{ limit: 1, ttl: seconds(60) }])],
      controllers: [RootController],
      providers: [{ provide: APP_GUARD, useClass: WatchingGuard }],
    })
    await agent.get('/').expect(200)
    const watched = await agent.get('/').expect(200)
    expect(refusals).toEqual([1])
    expect(watched.headers['retry-after']).toBe('60')
    expect(watched.headers['x-ratelimit-limit']).toBe('1')
    expect(watched.headers['x-ratelimit-remaining']).toBe('0')
    expect(watched.headers['x-ratelimit-reset']).toBe('60')
  })

  test('common options: errorMessage, getTracker, generateKey, skipIf, ignoreUserAgents, setHeaders', async () => {
    const keys: string[] = []
    const { agent } = await boot(platform, {
      imports: [
        ThrottlerModule.forRoot({
          throttlers: [{ limit: 1, ttl: seconds(60) }],
          errorMessage: (context, detail) =>
            `${context.getHandler().name} ${detail.tracker} ${detail.totalHits}/${detail.limit}`,
          getTracker: (req) => String(req.headers['x-user'] ?? 'anonymous'),
          generateKey: (_context, tracker, name) => {
            keys.push(`${name}:${tracker}`)
            return `${name}:${tracker}`
          },
          skipIf: (context) => context.switchToHttp().getRequest().headers['x-skip'] === '1',
          ignoreUserAgents: [/bot/g],
          setHeaders: false,
        }),
      ],
      controllers: [RootController],
      providers: [appGuard],
    })
    const admitted = await agent.get('/').set('x-user', 'ada').expect(200)
    expect(admitted.headers['x-ratelimit-limit']).toBeUndefined()
    const refused = await agent.get('/').set('x-user', 'ada').expect(429)
    expect(refused.body.message).toBe('root ada 2/1')
    expect(refused.headers['retry-after']).toBeUndefined()
    await agent.get('/').set('x-user', 'bob').expect(200)
    await agent.get('/').set('x-user', 'ada').set('x-skip', '1').expect(200)
    // A /g pattern matches every time (its lastIndex is reset), not every other time.
    for (let i = 0; i < 3; i++)
      await agent.get('/').set('x-user', 'ada').set('user-agent', 'a bot').expect(200)
    expect(keys).toEqual(['default:ada', 'default:ada', 'default:bob'])
  })

  test('forRootAsync: useFactory with inject, and useClass', async () => {
    @Injectable()
    class Limits {
      readonly perMinute = 1
    }
    @Module({ providers: [Limits], exports: [Limits] })
    class LimitsModule {}
    @Injectable()
    class Factory implements ThrottlerOptionsFactory {
      createThrottlerOptions(): ThrottlerModuleOptions {
        return [{ limit: 2, ttl: seconds(60) }]
      }
    }
    const byFactory = await boot(platform, {
      imports: [
        ThrottlerModule.forRootAsync({
          imports: [LimitsModule],
          inject: [Limits],
          useFactory: async (limits: Limits) => ({
            throttlers: [{ limit: limits.perMinute, ttl: seconds(60) }],
          }),
        }),
      ],
      controllers: [RootController],
      providers: [appGuard],
    })
    await byFactory.agent.get('/').expect(200)
    await byFactory.agent.get('/').expect(429)
    const byClass = await boot(platform, {
      imports: [ThrottlerModule.forRootAsync({ useClass: Factory })],
      controllers: [RootController],
      providers: [appGuard],
    })
    expect((await byClass.agent.get('/').expect(200)).headers['x-ratelimit-limit']).toBe('2')
  })
})
