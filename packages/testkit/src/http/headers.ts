/**
 * Owns the scenarios of the IETF header drafts and Retry-After.
 */
import { fakeClock, T0, ScenarioOptions, type ScenarioContext } from './harness'

export function registerHeaderCases(ctx: ScenarioContext): void {
  const { start, harness } = ctx
  describe('IETF header drafts, exactly', () => {
    const cases: Array<[ScenarioOptions['standardHeaders'], Record<string, string>]> = [
      [
        'draft-6',
        {
          'ratelimit-policy': '5;w=60',
          'ratelimit-limit': '5',
          'ratelimit-remaining': '4',
          'ratelimit-reset': '60',
        },
      ],
      ['draft-7', { 'ratelimit-policy': '5;w=60', ratelimit: 'limit=5, remaining=4, reset=60' }],
      ['draft-8', { 'ratelimit-policy': '"5-per-1m";q=5;w=60', ratelimit: '"5-per-1m";r=4;t=60' }],
      ['draft-10', { 'ratelimit-policy': '"5-per-1m";q=5;w=60', ratelimit: '"5-per-1m";r=4;t=60' }],
    ]
    test.each(cases)('%s', async (standardHeaders, expected) => {
      const agent = await start({
        limit: 5,
        window: '1m',
        algorithm: 'fixed-window',
        clock: fakeClock(T0).read,
        standardHeaders,
      })
      const res = await agent.get('/').expect(200)
      for (const [name, value] of Object.entries(expected)) expect(res.headers[name]).toBe(value)
      const others = ['ratelimit', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset']
      for (const name of others.filter((n) => !(n in expected)))
        expect(res.headers[name]).toBeUndefined()
    })

    test('legacyHeaders: false drops X-RateLimit-*, standard fields stay', async () => {
      const agent = await start({
        limit: 1,
        window: '1m',
        legacyHeaders: false,
        standardHeaders: 'draft-7',
      })
      const ok = await agent.get('/').expect(200)
      expect(ok.headers['x-ratelimit-limit']).toBeUndefined()
      expect(ok.headers['ratelimit']).toMatch(/^limit=1, remaining=0, reset=\d+$/)
      const limited = await agent.get('/').expect(429)
      expect(limited.headers['x-ratelimit-retry-after']).toBeUndefined()
      expect(limited.headers['retry-after']).toMatch(/^\d+$/)
    })
  })

  test('Retry-After is whole seconds rounded up, never before the announced reset', async () => {
    // sliding-log, limit 1 per 1.5 s, 0.7 s into a second: the wait is exactly 1500 ms.
    const clock = fakeClock(T0 + 700)
    const agent = await start({
      limit: 1,
      window: 1500,
      algorithm: 'sliding-log',
      clock: clock.read,
      standardHeaders: 'draft-7',
    })
    await agent.get('/').expect(200)
    const res = await agent.get('/').expect(429)
    const retryAfter = Number(res.headers['retry-after'])
    expect(res.headers['ratelimit']).toBe('limit=1, remaining=0, reset=2')
    if (harness.resetStyle === 'epoch') {
      // The reset is at epoch second 1_800_003 (rounded up); from 0.7 s past, that is 3 s away.
      expect(res.headers['x-ratelimit-reset']).toBe(String(Math.ceil((clock.now + 1500) / 1000)))
      expect(retryAfter).toBe(3)
      expect(clock.now + retryAfter * 1000).toBeGreaterThanOrEqual(
        Number(res.headers['x-ratelimit-reset']) * 1000,
      )
    } else {
      expect(res.headers['x-ratelimit-reset']).toBe('2')
      expect(retryAfter).toBe(2)
    }
    expect(res.headers['x-ratelimit-retry-after']).toBe(String(retryAfter))
    expect(res.body.retryAfter).toBe(retryAfter)
  })
}
