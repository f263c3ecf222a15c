/**
 * Owns the scenarios of rejections and their options: message, status, onLimited, ban, skip, lists.
 */
import { headerKey } from '@sluice/http'
import { type ScenarioContext } from './harness'

export function registerResponseCases(ctx: ScenarioContext): void {
  const { start } = ctx
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
