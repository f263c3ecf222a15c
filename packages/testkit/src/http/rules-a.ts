/**
 * Owns the first scenarios of rules and descriptors: matching, unlimited and shadow rules.
 */
import { fakeClock, T0, type ScenarioContext } from './harness'
import { descriptors, minute } from './rules-helpers'

export function registerRuleCases(ctx: ScenarioContext): void {
  const { start } = ctx
  test('per-route and per-user rules in one request, all-or-nothing; most specific wins', async () => {
    const agent = await start({
      clock: fakeClock(T0).read,
      descriptors,
      rules: {
        domain: 'api',
        descriptors: [
          { key: 'route', value: '/', rate_limit: minute(3) },
          { key: 'user', rate_limit: { ...minute(2), algorithm: 'fixed-window' } },
          { key: 'user', value: 'vip', rate_limit: minute(5) },
        ],
      },
      standardHeaders: 'draft-8',
    })
    const first = await agent.get('/').set('x-user', 'alice').expect(200)
    // Both rules decided this request; the binding one (fewest left) is the per-user one.
    expect(first.headers['x-ratelimit-limit']).toBe('2')
    expect(first.headers['x-ratelimit-remaining']).toBe('1')
    expect(first.headers['ratelimit-policy']).toBe('"api.route_/";q=3;w=60, "api.user";q=2;w=60')
    await agent.get('/').set('x-user', 'alice').expect(200)
    const limited = await agent.get('/').set('x-user', 'alice').expect(429)
    expect(limited.headers['x-ratelimit-limit']).toBe('2')
    expect(limited.headers['retry-after']).toBe('60')
    // alice's rejected request took nothing from the route: bob gets its third slot.
    await agent.get('/').set('x-user', 'bob').expect(200)
    const route = await agent.get('/').set('x-user', 'carol').expect(429)
    expect(route.headers['x-ratelimit-limit']).toBe('3')
    // The valued rule out-specifies the bare one: vip has 5 a minute (on a route without a rule).
    for (let i = 0; i < 5; i++) await agent.get('/bad').set('x-user', 'vip').expect(400)
    await agent.get('/bad').set('x-user', 'vip').expect(429)
    await agent.get('/bad').set('x-user', 'dave').expect(400)
    await agent.get('/bad').set('x-user', 'dave').expect(400)
    await agent.get('/bad').set('x-user', 'dave').expect(429)
  })

  test('a request no rule matches passes without headers; unlimited rules pass', async () => {
    const agent = await start({
      descriptors: async (req) => descriptors(req),
      rules: {
        domain: 'api',
        descriptors: [
          { key: 'user', rate_limit: minute(1) },
          { key: 'user', value: 'admin', unlimited: true },
        ],
      },
    })
    for (let i = 0; i < 3; i++) {
      const anonymous = await agent.get('/').expect(200)
      expect(anonymous.headers['x-ratelimit-limit']).toBeUndefined()
      expect(anonymous.body.remaining).toBeNull()
      const admin = await agent.get('/').set('x-user', 'admin').expect(200)
      expect(admin.headers['x-ratelimit-limit']).toBeUndefined()
    }
    await agent.get('/').set('x-user', 'eve').expect(200)
    await agent.get('/').set('x-user', 'eve').expect(429)
  })

  test('a shadow rule never blocks and sends no headers; enforced rules still count', async () => {
    const agent = await start({
      clock: fakeClock(T0).read,
      descriptors,
      rules: {
        domain: 'api',
        descriptors: [
          { key: 'route', value: '/', rate_limit: minute(4) },
          { key: 'user', rate_limit: minute(1), shadow_mode: true },
        ],
      },
      standardHeaders: 'draft-8',
    })
    for (const remaining of [3, 2, 1, 0]) {
      const res = await agent.get('/').set('x-user', 'alice').expect(200)
      // Only the enforced route rule shows; the shadow one (over its limit) is silent.
      expect(res.headers['x-ratelimit-limit']).toBe('4')
      expect(res.headers['x-ratelimit-remaining']).toBe(String(remaining))
      expect(res.headers['ratelimit-policy']).toBe('"api.route_/";q=4;w=60')
    }
    await agent.get('/').set('x-user', 'alice').expect(429)
    // Shadow rules alone: always admitted, never a header.
    for (let i = 0; i < 3; i++) {
      const res = await agent.get('/bad').set('x-user', 'alice').expect(400)
      expect(res.headers['x-ratelimit-limit']).toBeUndefined()
      expect(res.headers['retry-after']).toBeUndefined()
    }
  })
}
