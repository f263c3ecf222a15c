/**
 * Owns the scenarios of concurrency limits: the slot goes back once the response closes,
 * however it ends (finished, failed, or abandoned by the client), and the IETF headers.
 */
import { concurrencySlotKey, MemoryStore } from '@sluice/core'
import { abandonRequest, noticeKeying, settle, type ScenarioContext } from './harness'

/** Slots of `key` taken now in `store` under a concurrency limit of 1 (the cases' limit). */
const taken = (store: MemoryStore, key: string) =>
  store.slots.count(concurrencySlotKey(key, 1), Date.now())

export function registerConcurrencyCases(ctx: ScenarioContext): void {
  const { start, lastPort } = ctx

  test('a finished response gives its slot back: one at a time, one after another', async () => {
    const store = new MemoryStore()
    const agent = await start({ concurrency: 1, store, clock: Date.now })
    for (let i = 0; i < 3; i++) {
      await agent.get('/').expect(200)
      await settle()
      expect(await taken(store, '127.0.0.1')).toBe(0)
    }
  })

  test('a failed response gives its slot back too', async () => {
    const store = new MemoryStore()
    const agent = await start({ concurrency: 1, store, clock: Date.now })
    await agent.get('/bad').expect(400)
    await settle()
    expect(await taken(store, '127.0.0.1')).toBe(0)
    await agent.get('/').expect(200)
  })

  test('a client that disconnects gives its slot back at once', async () => {
    const store = new MemoryStore()
    const { key, keyed } = noticeKeying(1)
    const agent = await start({ concurrency: 1, store, clock: Date.now, key })
    await abandonRequest(lastPort(), keyed)
    await settle()
    expect(await taken(store, '127.0.0.1')).toBe(0)
    await agent.get('/').expect(200)
  })

  test('rate and concurrency limits together: IETF fields name the quota unit', async () => {
    const store = new MemoryStore()
    const agent = await start({
      limit: 10,
      window: '1m',
      concurrency: 2,
      store,
      standardHeaders: 'draft-8',
    })
    const res = await agent.get('/').expect(200)
    expect(res.headers['ratelimit-policy']).toBe(
      '"10-per-1m";q=10;w=60, "2-concurrent";q=2;qu="concurrent-requests"',
    )
    // At the handler the request held one slot of two: 1 free.
    expect(res.headers['ratelimit']).toMatch(/^"10-per-1m";r=9;t=\d+, "2-concurrent";r=1$/)
  })
}
