/**
 * Owns the scenarios of limits, windows, costs and keys.
 */
import { headerKey } from '@sluice/http'
import { fakeClock, T0, type ScenarioContext } from './harness'

export function registerLimitCases(ctx: ScenarioContext): void {
  const { start, startFixed, startFixedMinute, passUpToTheLimit } = ctx
  test('boundary: the limit passes, limit + 1 is 429 with remaining 0 and the JSON body', async () => {
    const { agent, clock } = await startFixedMinute(3)
    const limited = await passUpToTheLimit(agent, clock, 3)
    expect(limited.headers['x-ratelimit-retry-after']).toBe('20')
    expect(limited.body).toMatchObject({
      error: 'Too Many Requests',
      message: 'Too many requests, please try again in 20 seconds.',
      retryAfter: 20,
    })
  })

  test('the window resets on the (fake) clock', async () => {
    const { agent, clock } = await startFixed(1, '1m', {}, T0)
    await agent.get('/').expect(200)
    await agent.get('/').expect(429)
    clock.now += 59_999
    await agent.get('/').expect(429)
    clock.now += 1
    await agent.get('/').expect(200)
  })

  test("anchor 'first-request': each key's window runs one window from its first request", async () => {
    const { agent, clock } = await startFixed(1, '1m', { anchor: 'first-request' }, T0 + 30_000)
    await agent.get('/').expect(200)
    clock.now += 40_000 // past the clock's minute boundary: the key's own window still runs
    const limited = await agent.get('/').expect(429)
    expect(limited.headers['retry-after']).toBe('20')
    clock.now += 20_000
    await agent.get('/').expect(200)
  })

  test('limit as an async function: one limit per tier', async () => {
    const agent = await start({
      limit: async (req) => (req.headers['x-tier'] === 'gold' ? 3 : 1),
      window: '1m',
    })
    await agent.get('/').expect(200)
    await agent.get('/').expect(429)
    for (let i = 0; i < 3; i++) {
      const res = await agent.get('/').set('x-tier', 'gold').expect(200)
      expect(res.headers['x-ratelimit-limit']).toBe('3')
    }
    await agent.get('/').set('x-tier', 'gold').expect(429)
  })

  test('window as a function of the request and its key; a limit function that gives 0 refuses', async () => {
    const clock = fakeClock(T0)
    const windows: Array<string> = []
    const agent = await start({
      algorithm: 'fixed-window',
      anchor: 'first-request',
      clock: clock.read,
      key: headerKey('x-client'),
      limit: (_req, key) => (key === 'x-client:blocked' ? 0 : 1),
      window: async (req, key) => {
        windows.push(typeof req === 'object' && req !== null ? key : 'no request')
        return key === 'x-client:slow' ? '1m' : 10_000
      },
    })
    await agent.get('/').set('x-client', 'slow').expect(200)
    const slow = await agent.get('/').set('x-client', 'slow').expect(429)
    expect(slow.headers['retry-after']).toBe('60')
    await agent.get('/').set('x-client', 'fast').expect(200)
    const fast = await agent.get('/').set('x-client', 'fast').expect(429)
    expect(fast.headers['retry-after']).toBe('10')
    for (let i = 0; i < 2; i++) {
      const blocked = await agent.get('/').set('x-client', 'blocked').expect(429)
      expect([blocked.headers['x-ratelimit-limit'], blocked.headers['retry-after']]).toEqual([
        '0',
        '10',
      ])
    }
    expect(windows).toEqual([
      'x-client:slow',
      'x-client:slow',
      'x-client:fast',
      'x-client:fast',
      'x-client:blocked',
      'x-client:blocked',
    ])
  })

  test('cost as a function of the request', async () => {
    const agent = await start({
      limit: 5,
      window: '1m',
      cost: (req) => Number(req.headers['x-cost'] ?? 1),
    })
    await agent.get('/').set('x-cost', '4').expect(200)
    const res = await agent.get('/').set('x-cost', '2').expect(429)
    expect(res.headers['x-ratelimit-remaining']).toBe('1')
    await agent.get('/').expect(200)
  })

  test('a request whose cost is over the limit is told it can never pass, with no Retry-After', async () => {
    const agent = await start({ limit: 10, window: '1m', cost: () => 15 })
    const res = await agent.get('/').expect(429)
    expect(res.headers['retry-after']).toBeUndefined()
    expect(res.headers['x-ratelimit-retry-after']).toBeUndefined()
    expect(res.body).toMatchObject({
      error: 'Too Many Requests',
      message:
        'This request costs more than the limit of 10 allows at once, so it can never pass; retrying will not help.',
      retryAfter: null,
    })
  })

  test('key by API token; requests without one fall back to the IP', async () => {
    const agent = await start({ limit: 1, window: '1m', key: headerKey('x-api-key') })
    await agent.get('/').set('x-api-key', 'alpha').expect(200)
    await agent.get('/').set('x-api-key', 'alpha').expect(429)
    await agent.get('/').set('x-api-key', 'beta').expect(200)
    await agent.get('/').expect(200)
    await agent.get('/').expect(429)
  })

  test('a key header sent twice keys by its first value: no new bucket per variant', async () => {
    const agent = await start({ limit: 1, window: '1m', key: headerKey('x-api-key') })
    await agent.get('/').set('x-api-key', 'alpha').expect(200)
    // An array is sent as one header line per value (superagent's types allow it for Cookie
    // only); Node joins them as "alpha, junk-1".
    const lines = (...values: string[]) => values as unknown as string
    await agent.get('/').set('x-api-key', lines('alpha', 'junk-1')).expect(429)
    await agent.get('/').set('x-api-key', lines('alpha', 'junk-2')).expect(429)
    await agent.get('/').set('x-api-key', lines('beta', 'alpha')).expect(200)
    await agent.get('/').set('x-api-key', 'beta').expect(429)
  })
}
