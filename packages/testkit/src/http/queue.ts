/**
 * Owns the scenarios of the queue: holding instead of 429.
 */
import { watchStalls } from '../stalls'
import {
  fakeClock,
  noticeKeying,
  abandonRequest,
  settle,
  T0,
  type ScenarioContext,
} from './harness'

export function registerQueueCases(ctx: ScenarioContext): void {
  const { start, harness, lastPort } = ctx
  test('requests over the limit are held for their slot, in order, none early', async () => {
    // 20 a second, burst 1: slots 50 ms apart; the fake clock stands still, the hold is real.
    const agent = await start({
      algorithm: 'gcra',
      limit: 20,
      window: '1s',
      burst: 1,
      clock: fakeClock(T0).read,
      queue: { maxWaitMs: 500 },
    })
    const started = performance.now()
    const done: number[] = []
    await Promise.all(
      [0, 1, 2, 3].map(async (i) => {
        await agent.get('/').set('x-n', String(i)).expect(200)
        done.push(performance.now() - started)
      }),
    )
    done.sort((a, b) => a - b)
    expect(done[3]).toBeGreaterThanOrEqual(149)
  })

  test('a wait longer than maxWaitMs is answered 429 at once', async () => {
    const agent = await start({
      algorithm: 'token-bucket',
      limit: 1,
      window: '1s',
      clock: fakeClock(T0).read,
      queue: { maxWaitMs: 200 },
    })
    await agent.get('/').expect(200)
    const stalls = watchStalls()
    const started = performance.now()
    const res = await agent.get('/').expect(429)
    const elapsed = performance.now() - started
    // Not held until maxWaitMs (the slot is 1 s away) and then refused: refused at once.
    expect(elapsed).toBeLessThan(100 + stalls.stop())
    expect(res.headers['retry-after']).toBe('1')
  })

  test('a client that disconnects while queued gives its slot back', async () => {
    // 10 a second, burst 1: the second request is held 100 ms. A third may wait 150 ms:
    // enough for the slot after the first (100 ms), not for one after the second (200 ms).
    const { key, keyed } = noticeKeying(2)
    const agent = await start({
      algorithm: 'gcra',
      limit: 10,
      window: '1s',
      burst: 1,
      clock: fakeClock(T0).read,
      queue: { maxWaitMs: 150 },
      key,
    })
    const port = lastPort()
    await agent.get('/').expect(200)
    await abandonRequest(port, keyed)
    await settle()
    await agent.get('/').expect(200)
  })

  test('queue with rules: meter rules hold, the request goes on at its slot', async () => {
    const agent = await start({
      clock: fakeClock(T0).read,
      descriptors: (req) => [['user', req.headers['x-user'] as string | undefined]],
      rules: {
        domain: 'api',
        descriptors: [
          {
            key: 'user',
            rate_limit: { unit: 'second', requests_per_unit: 20, algorithm: 'gcra', burst: 1 },
          },
        ],
      },
      queue: { maxWaitMs: 60 },
    })
    const results = await Promise.all(
      [0, 1, 2].map((i) => agent.get('/').set('x-user', 'alice').set('x-n', String(i))),
    )
    expect(results.map((r) => r.status).sort()).toEqual([200, 200, 429])
  })

  test('queue needs a meter algorithm and a positive maxWaitMs (ConfigError at start-up)', async () => {
    await expect(harness.start({ limit: 5, queue: { maxWaitMs: 100 } })).rejects.toThrow(
      /`algorithm` must be a meter algorithm .* when `queue` is given.*got "sliding-window"/,
    )
    await expect(
      harness.start({ algorithm: 'gcra', limit: 5, queue: { maxWaitMs: 0 } }),
    ).rejects.toThrow(/`queue.maxWaitMs` must be a positive number of ms; got 0/)
    await expect(
      harness.start({ algorithm: 'gcra', limit: 5, queue: { maxWait: 10 } as never }),
    ).rejects.toThrow(/unknown option `maxWait` for queue/)
  })
}
