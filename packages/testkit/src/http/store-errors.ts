/**
 * Owns the scenarios of a failing store (onStoreError) and of several limits on one route.
 */
import { fakeClock, captureLogger, FailingStore, T0, type ScenarioContext } from './harness'

export function registerStoreErrorCases(ctx: ScenarioContext): void {
  const { start } = ctx
  test('a failing store goes to error handling as 500 by default', async () => {
    let handled = 0
    const agent = await start(
      { limit: 1, window: '1m', store: new FailingStore(), timeoutMs: 50 },
      {
        onHandled: () => void handled++,
      },
    )
    await agent.get('/').expect(500)
    expect(handled).toBe(0)
  })

  test("onStoreError: 'allow' passes the request on exactly once", async () => {
    let handled = 0
    const agent = await start(
      { limit: 1, window: '1m', store: new FailingStore(), onStoreError: 'allow' },
      { onHandled: () => void handled++ },
    )
    await agent.get('/').expect(200)
    await agent.get('/').expect(200)
    expect(handled).toBe(2)
  })

  test("onStoreError: 'deny' answers 429 with Retry-After: 1 and the configured limit", async () => {
    // A clock off the second boundary: an epoch reset rounded up must not make it 2.
    const clock = fakeClock(T0 + 567)
    const agent = await start({
      limit: 7,
      window: '1m',
      store: new FailingStore(),
      onStoreError: 'deny',
      clock: clock.read,
      logger: captureLogger(),
    })
    const res = await agent.get('/').expect(429)
    expect(res.headers['retry-after']).toBe('1')
    expect(res.headers['x-ratelimit-limit']).toBe('7')
    expect(res.headers['x-ratelimit-remaining']).toBe('0')
  })

  test('several limits on one route: one list, the tightest decides', async () => {
    const clock = fakeClock(T0)
    const agent = await start({
      algorithm: 'fixed-window',
      limits: [
        { limit: 2, window: '1s', name: 'burst' },
        { limit: 3, window: '1m', name: 'sustained' },
      ],
      clock: clock.read,
      standardHeaders: 'draft-8',
    })
    const first = await agent.get('/').expect(200)
    expect(first.headers['ratelimit-policy']).toBe('"burst";q=2;w=1, "sustained";q=3;w=60')
    expect(first.headers['ratelimit']).toBe('"burst";r=1;t=1, "sustained";r=2;t=60')
    await agent.get('/').expect(200)
    const burst = await agent.get('/').expect(429)
    expect(burst.headers['retry-after']).toBe('1')
    expect(burst.headers['ratelimit']).toBe('"burst";r=0;t=1, "sustained";r=1;t=60')
    clock.now += 1000
    await agent.get('/').expect(200)
    clock.now += 1000
    const sustained = await agent.get('/').expect(429)
    expect(sustained.headers['retry-after']).toBe('58')
    expect(sustained.headers['x-ratelimit-limit']).toBe('3')
  })
}
