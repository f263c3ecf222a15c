/**
 * Bad input: a wrong throttler option is a ConfigError naming it and its value; a ttl that looks
 * like seconds is warned about once; an unknown name in @Throttle() fails the start; a
 * getTracker that throws or returns no tracker falls back to the client IP (never one bucket,
 * never a crash).
 */
import { Controller, Get } from '@nestjs/common'
import { ConfigError } from '@sluice/core'
import {
  resetThrottlerWarnings,
  seconds,
  Throttle,
  ThrottlerModule,
  type ThrottlerModuleObjectOptions,
  type ThrottlerOptions,
} from '@sluice/nest'
import { appGuard, boot, PLATFORMS, RootController, warnings } from './helpers'

describe('throttler options are checked when the module is created', () => {
  test.each([
    [
      { limit: -1, ttl: 1000 },
      /`throttlers\[0\]\.limit` must be a positive whole number .*; got -1$/,
    ],
    [{ limit: 1.5, ttl: 1000 }, /`throttlers\[0\]\.limit` .*; got 1\.5$/],
    [
      { limit: 5, ttl: 2.5 },
      /`throttlers\[0\]\.ttl` must be a positive whole number of milliseconds .*; got 2\.5$/,
    ],
    [{ limit: 5, ttl: -1000 }, /`throttlers\[0\]\.ttl` .*; got -1000$/],
    [{ limit: 5, ttl: 1000, blockDuration: 0 }, /`throttlers\[0\]\.blockDuration` .*; got 0$/],
    [
      { limit: 5, ttl: 1000, name: '' },
      /`throttlers\[0\]\.name` must be a non-empty string; got ""$/,
    ],
    [{ limit: 5 }, /`throttlers\[0\]\.ttl` .*; got undefined$/],
  ])('%j', (throttler, message) => {
    const create = () => ThrottlerModule.forRoot([throttler as ThrottlerOptions])
    expect(create).toThrow(ConfigError)
    expect(create).toThrow(message)
  })

  test('two throttlers of one name are an error', () => {
    expect(() =>
      ThrottlerModule.forRoot([
        { limit: 1, ttl: 1000 },
        { name: 'default', limit: 2, ttl: 2000 },
      ]),
    ).toThrow(/`throttlers\[1\]\.name` must be a name no other throttler has; got "default"/)
  })

  test('a ttl under 1000 with a limit over 1 is most likely seconds: warned once', () => {
    resetThrottlerWarnings()
    const logger = warnings()
    ThrottlerModule.forRoot({ throttlers: [{ limit: 1, ttl: 500 }], logger })
    expect(logger.seen).toEqual([])
    ThrottlerModule.forRoot({
      throttlers: [
        { limit: 10, ttl: 60 },
        { name: 'long', limit: 100, ttl: 3600 },
      ],
      logger,
    })
    ThrottlerModule.forRoot({ throttlers: [{ limit: 5, ttl: 30 }], logger })
    expect(logger.seen).toEqual([
      '[sluice] `throttlers[0].ttl` is 60, in milliseconds (since @nestjs/throttler 5): 10 requests per 60 ms. If you meant seconds, write seconds(60).',
    ])
  })
})

describe.each(PLATFORMS)('Nest + %s: bad input at start-up and at request time', (platform) => {
  test('forRootAsync options are checked when the app starts', async () => {
    const start = boot(platform, {
      imports: [ThrottlerModule.forRootAsync({ useFactory: () => [{ limit: 0, ttl: 1000 }] })],
      controllers: [RootController],
      providers: [appGuard],
    })
    await expect(start).rejects.toThrow(/`throttlers\[0\]\.limit` .*; got 0/)
  })

  test('@Throttle() naming a throttler the module does not configure fails the start', async () => {
    @Controller('typo')
    class Typo {
      @Throttle({ shrot: { limit: 1, ttl: seconds(1) } })
      @Get()
      route() {
        return { ok: true }
      }
    }
    const start = boot(platform, {
      imports: [ThrottlerModule.forRoot([{ limit: 5, ttl: seconds(60) }])],
      controllers: [Typo],
      providers: [appGuard],
    })
    await expect(start).rejects.toThrow(
      '@Throttle() on Typo.route names throttler "shrot", which ThrottlerModule does not configure (configured: "default")',
    )
  })

  test('a limit function returning a bad value answers 500 (a ConfigError), the app keeps serving', async () => {
    let limit = -2
    const logger = warnings()
    const { agent } = await boot(platform, {
      imports: [
        ThrottlerModule.forRoot({ throttlers: [{ limit: () => limit, ttl: seconds(60) }], logger }),
      ],
      controllers: [RootController],
      providers: [appGuard],
    })
    await agent.get('/').expect(500)
    limit = 1
    await agent.get('/').expect(200)
    await agent.get('/').expect(429)
  })

  test.each([
    ['undefined', () => undefined],
    ['a number', () => 42],
    ['an empty string', () => ''],
    ['an object', () => ({ id: 1 })],
    [
      'a throw',
      () => {
        throw new Error('no session')
      },
    ],
  ])(
    'getTracker returning %s: each client tracked by its IP, warned once',
    async (_kind, getTracker) => {
      const fallbacks = await clientsByIp({ getTracker: getTracker as () => string })
      expect(fallbacks.filter((line) => line.includes('getTracker'))).toEqual([
        expect.stringMatching(
          /^\[sluice\] getTracker (returned|threw) .* for throttler "default": not a tracker, so such requests are tracked by their client IP instead/,
        ),
      ])
    },
  )

  test('generateKey returning no key: each client limited by its IP, warned once', async () => {
    const fallbacks = await clientsByIp({ generateKey: () => undefined as unknown as string })
    expect(fallbacks).toEqual([
      '[sluice] generateKey returned undefined for throttler "default": not a key, so such requests are keyed by their client IP instead. Return a non-empty string.',
    ])
  })

  /** Two clients behind a trusted proxy, one limit each: their own buckets; the warnings. */
  async function clientsByIp(
    options: Pick<ThrottlerModuleObjectOptions, 'getTracker' | 'generateKey'>,
  ) {
    const logger = warnings()
    const throttlers = [{ limit: 1, ttl: seconds(60) }]
    const { agent } = await boot(
      platform,
      {
        imports: [ThrottlerModule.forRoot({ throttlers, logger, ...options })],
        controllers: [RootController],
        providers: [appGuard],
      },
      true,
    )
    await agent.get('/').set('X-Forwarded-For', '203.0.113.1').expect(200)
    await agent.get('/').set('X-Forwarded-For', '203.0.113.2').expect(200)
    await agent.get('/').set('X-Forwarded-For', '203.0.113.1').expect(429)
    return logger.seen
  }
})
