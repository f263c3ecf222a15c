/**
 * Owns the scenarios of rejections and their options: message, status, onLimited, ban, skip, lists.
 */
import { headerKey } from '@sluice/http'
import { T0, type ScenarioContext } from './harness'

export function registerResponseCases(ctx: ScenarioContext): void {
  const { start, startFixed } = ctx
  test('custom message (string, async function) and status', async () => {
    const agent = await start({ limit: 1, window: '1m', message: 'Slow down', statusCode: 503 })
    await agent.get('/').expect(200)
    const res = await agent.get('/').expect(503)
    expect(res.body).toMatchObject({ error: 'Service Unavailable', message: 'Slow down' })

    const other = await start({
      limit: 1,
      window: '1m',
      message: async (_req, decision) => ({ reason: 'quota', limit: decision.limit }),
    })
    await other.get('/').expect(200)
    const custom = await other.get('/').expect(429)
    expect(custom.body).toMatchObject({ reason: 'quota', limit: 1 })
  })

  test('onLimited sees every rejection; ban turns later ones into 403', async () => {
    const limited: number[] = []
    const agent = await start({
      limit: 1,
      window: '1m',
      ban: 1,
      onLimited: (_req, decision) => void limited.push(decision.limit),
    })
    await agent.get('/').expect(200)
    await agent.get('/').expect(429)
    const banned = await agent.get('/').expect(403)
    expect(banned.body).toMatchObject({ error: 'Forbidden' })
    expect(limited).toEqual([1, 1])
  })

  test('ban counts rejections in a row: an admitted request starts the count again', async () => {
    // The first rejection's count would outlive its window.
    const { agent, clock } = await startFixed(1, '1s', { ban: 1 }, T0 + 500)
    const statuses = async () => {
      const seen = []
      for (let i = 0; i < 3; i++) seen.push((await agent.get('/')).status)
      return seen
    }
    expect(await statuses()).toEqual([200, 429, 403])
    clock.now += 500
    expect(await statuses()).toEqual([200, 429, 403])
  })

  test("backoff 'restart': each rejection holds the key out for a whole window from then", async () => {
    const { agent, clock } = await startFixed(1, '10s', { backoff: 'restart' }, T0)
    await agent.get('/').expect(200)
    clock.now += 4000
    expect((await agent.get('/').expect(429)).headers['retry-after']).toBe('10')
    clock.now += 9000 // past the fixed window's end, inside the backoff
    expect((await agent.get('/').expect(429)).headers['retry-after']).toBe('10')
    clock.now += 10_000
    await agent.get('/').expect(200)
  })

  test("backoff 'double': the n-th rejection in a row holds the key out window x 2^(n-1)", async () => {
    const { agent, clock } = await startFixed(1, '1s', { backoff: 'double' }, T0)
    await agent.get('/').expect(200)
    const waits = []
    for (let i = 0; i < 4; i++)
      waits.push((await agent.get('/').expect(429)).headers['retry-after'])
    expect(waits).toEqual(['1', '2', '4', '8'])
    clock.now += 7000 // still held out: this rejection doubles the wait again
    expect((await agent.get('/').expect(429)).headers['retry-after']).toBe('16')
    clock.now += 16_000
    await agent.get('/').expect(200)
    expect((await agent.get('/').expect(429)).headers['retry-after']).toBe('1')
  })

  test('skip (async) requests are not counted and get no headers', async () => {
    const agent = await start({
      limit: 1,
      window: '1m',
      skip: async (req) => req.headers['x-skip'] === '1',
    })
    for (let i = 0; i < 3; i++) {
      const res = await agent.get('/').set('x-skip', '1').expect(200)
      expect(res.headers['x-ratelimit-limit']).toBeUndefined()
      expect(res.body.remaining).toBeNull()
    }
    await agent.get('/').expect(200)
    await agent.get('/').expect(429)
  })

  test('allowList passes, denyList gets 403', async () => {
    const allowed = await start({ limit: 1, window: '1m', allowList: ['127.0.0.1'] })
    for (let i = 0; i < 3; i++) await allowed.get('/').expect(200)
    const denied = await start({ limit: 1, window: '1m', denyList: ['127.0.0.0/8'] })
    const res = await denied.get('/').expect(403)
    expect(res.body).toMatchObject({ error: 'Forbidden' })
    const byKey = await start({
      limit: 5,
      window: '1m',
      key: headerKey('x-api-key'),
      denyList: ['x-api-key:evil'],
    })
    await byKey.get('/').set('x-api-key', 'evil').expect(403)
    await byKey.get('/').set('x-api-key', 'good').expect(200)
  })
}
