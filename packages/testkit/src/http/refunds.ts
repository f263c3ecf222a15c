/**
 * Owns the scenarios of refunds: skipSuccessfulRequests, skipFailedRequests, clients that leave.
 */
import {
  fakeClock,
  sleep,
  noticeKeying,
  abandonRequest,
  settle,
  T0,
  type ScenarioContext,
} from './harness'

export function registerRefundCases(ctx: ScenarioContext): void {
  const { start, lastPort } = ctx
  test('skipSuccessfulRequests refunds 2xx; failures count', async () => {
    const agent = await start({ limit: 2, window: '1m', skipSuccessfulRequests: true })
    for (let i = 0; i < 4; i++) {
      await agent.get('/').expect(200)
      await settle()
    }
    await agent.get('/bad').expect(400)
    await settle()
    await agent.get('/bad').expect(400)
    await settle()
    await agent.get('/').expect(429)
  })

  test('skipFailedRequests refunds failures; requestWasSuccessful decides', async () => {
    const agent = await start({ limit: 2, window: '1m', skipFailedRequests: true })
    for (let i = 0; i < 4; i++) {
      await agent.get('/bad').expect(400)
      await settle()
    }
    await agent.get('/').expect(200)
    await agent.get('/').expect(200)
    await settle()
    await agent.get('/').expect(429)

    const custom = await start({
      limit: 1,
      window: '1m',
      skipFailedRequests: true,
      requestWasSuccessful: (_req, res) => res.statusCode !== 400,
    })
    await custom.get('/bad').expect(400)
    await settle()
    await custom.get('/').expect(200)
    await settle()
    await custom.get('/').expect(429)
  })

  test('skipFailedRequests refunds a request whose client went away before the answer', async () => {
    const clock = fakeClock(T0)
    const { key, keyed } = noticeKeying(2)
    // leaky-bucket holds the second request 100 ms for shaping: time for the client to leave.
    const agent = await start({
      algorithm: 'leaky-bucket',
      limit: 10,
      window: '1s',
      burst: 2,
      skipFailedRequests: true,
      clock: clock.read,
      key,
    })
    const port = lastPort()
    await agent.get('/').expect(200)
    await abandonRequest(port, keyed)
    // Without the refund the queue (burst 2) stays full on the unmoved clock, and a rejected
    // try counts nothing: only the refund lets a request through. It follows the server's
    // 'close' of the abandoned request, which a loaded machine may deliver late, so the third
    // request is retried for up to 3 s rather than sent once after a fixed pause.
    let third = await agent.get('/')
    for (const giveUp = Date.now() + 3000; third.status === 429 && Date.now() < giveUp;) {
      await sleep(50)
      third = await agent.get('/')
    }
    expect(third.status).toBe(200)
    expect(third.body).toEqual({ ok: true, remaining: 0 })
  })
}
