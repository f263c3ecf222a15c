/**
 * Owns the scenarios of leaky-bucket shaping holds, and bad options at start-up.
 */
import { ConfigError } from '@sluice/core'
import {
  fakeClock,
  sleep,
  noticeKeying,
  abandonRequest,
  T0,
  ScenarioOptions,
  type ScenarioContext,
} from './harness'

export function registerShapingCases(ctx: ScenarioContext): void {
  const { start, harness, lastPort } = ctx
  test('leaky-bucket: an admitted request is held for its delay', async () => {
    const agent = await start({
      algorithm: 'leaky-bucket',
      limit: 10,
      window: 1000,
      burst: 3,
      clock: fakeClock(T0).read,
    })
    let started = performance.now()
    await agent.get('/').expect(200)
    const first = performance.now() - started
    started = performance.now()
    await agent.get('/').expect(200)
    const second = performance.now() - started
    expect(second).toBeGreaterThanOrEqual(99)
    expect(second).toBeGreaterThan(first)
  })

  test('a client that leaves while held for shaping is released at once: its charge back, the route never run', async () => {
    let handled = 0
    const { key, keyed } = noticeKeying(2)
    // limit 2 a second, burst 3, on a still clock: delays 0, 500 and 1000 ms, nothing leaks.
    const agent = await start(
      {
        algorithm: 'leaky-bucket',
        limit: 2,
        window: 1000,
        burst: 3,
        clock: fakeClock(T0).read,
        key,
      },
      { onHandled: () => void handled++ },
    )
    const port = lastPort()
    await agent.get('/').expect(200)
    await abandonRequest(port, keyed) // would be held 500 ms; leaves at once
    await sleep(700) // past the hold it would have had
    expect(handled).toBe(1)
    // Its place in the bucket was given back: two more fit (500 and 1000 ms), a third does not.
    const [a, b, c] = await Promise.all([agent.get('/'), agent.get('/'), agent.get('/')])
    expect([a.status, b.status, c.status].sort()).toEqual([200, 200, 429])
    expect(handled).toBe(3)
  })

  test('a hold longer than maxDelayMs, or beyond maxHolds, is 429 with Retry-After and takes nothing', async () => {
    let handled = 0
    const options = { algorithm: 'leaky-bucket', limit: 2, window: 1000, burst: 3 } as const
    const agent = await start(
      { ...options, clock: fakeClock(T0).read, maxDelayMs: 400 },
      { onHandled: () => void handled++ },
    )
    await agent.get('/').expect(200)
    const refused = await agent.get('/').expect(429) // would wait 500 ms
    expect(refused.headers['retry-after']).toBe('1')
    // The refused request took nothing: the next one is refused for the same 500 ms wait.
    await agent.get('/').expect(429)
    expect(handled).toBe(1)
    const none = await start({ ...options, clock: fakeClock(T0).read, maxHolds: 0 })
    await none.get('/').expect(200)
    await none.get('/').expect(429)
    await expect(harness.start({ ...options, maxHolds: -1 })).rejects.toThrow(
      /`maxHolds` must be a whole number of requests/,
    )
  })

  test('a bad option fails at start-up with a ConfigError naming it', async () => {
    await expect(harness.start({ limit: 0, window: '1m' })).rejects.toThrow(ConfigError)
    await expect(harness.start({ limit: 0, window: '1m' })).rejects.toThrow(
      /`limit` must be a positive integer; got 0/,
    )
    await expect(harness.start({ window: 'soon' })).rejects.toThrow(/`window`.*"soon"/)
    await expect(harness.start({ standardHeaders: 'draft-9' as 'draft-8' })).rejects.toThrow(
      /`standardHeaders`/,
    )
    await expect(harness.start({ limitt: 5 } as ScenarioOptions)).rejects.toThrow(
      /unknown option `limitt`/,
    )
  })
}
