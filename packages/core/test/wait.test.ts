import { createLimiter, MemoryStore, SluiceError, type Decision } from '@sluice/core'
import { watchStalls } from '@sluice/testkit'
import { limiterAt } from './helpers'

const T0 = 60_000 * 30_000

describe('wait: reservations on a fake clock', () => {
  test.each(['gcra', 'token-bucket', 'leaky-bucket'] as const)(
    '%s: each waiter reserves the next slot, window / limit apart',
    async (algorithm) => {
      // limit 10 a second, burst 1: one now, then one every 100 ms.
      const { limiter } = limiterAt(T0, { algorithm, limit: 10, window: 1000, burst: 1 })
      const delays: number[] = []
      const pending: Promise<Decision>[] = []
      for (let i = 0; i < 3; i++) {
        pending.push(limiter.wait('k', { maxWaitMs: 1000 }))
      }
      for (const decision of await Promise.all(pending)) {
        expect(decision.allowed).toBe(true)
        delays.push(decision.delayMs)
      }
      expect(delays).toEqual([0, 100, 200])
    },
  )

  test('a slot further away than maxWaitMs: rejected at once, nothing taken', async () => {
    const { limiter, clock } = limiterAt(T0, {
      algorithm: 'gcra',
      limit: 10,
      window: 1000,
      burst: 1,
    })
    expect((await limiter.wait('k', { maxWaitMs: 0 })).allowed).toBe(true)
    const stalls = watchStalls()
    const started = performance.now()
    const refused = await limiter.wait('k', { maxWaitMs: 99 })
    const elapsed = performance.now() - started
    // At once, not after the 99 ms it may not wait (give or take a stalled machine).
    expect(elapsed).toBeLessThan(50 + stalls.stop())
    expect(refused.allowed).toBe(false)
    // Retry after 1 ms and the same wait (99 ms) reaches the slot at 100 ms.
    expect(refused.retryAfterMs).toBe(1)
    // Nothing was reserved: 100 ms later the next request passes at once.
    clock.now += 100
    const next = await limiter.wait('k', { maxWaitMs: 0 })
    expect(next).toMatchObject({ allowed: true, delayMs: 0 })
  })

  test('maxWaitMs defaults to the longest window', async () => {
    const { limiter } = limiterAt(T0, { algorithm: 'gcra', limit: 1, window: 50, burst: 1 })
    await limiter.wait('k')
    expect((await limiter.wait('k')).delayMs).toBe(50)
    expect((await limiter.wait('k')).allowed).toBe(false) // 100 ms away, past one window
  })

  test('a shadow limiter never holds: it decides as consume does', async () => {
    const { limiter } = limiterAt(T0, { algorithm: 'gcra', limit: 1, window: 60_000, shadow: true })
    await limiter.wait('k')
    const second = await limiter.wait('k', { maxWaitMs: 120_000 })
    expect(second.allowed).toBe(true)
    expect(second.delayMs).toBe(0)
    expect(second.shadow?.allowed).toBe(false)
  })
})

describe('wait: argument checks', () => {
  const { limiter } = limiterAt(T0, { algorithm: 'gcra', limit: 10, window: 1000 })
  test.each([
    [{ cost: 0 }, /`cost` must be a positive integer; got 0/],
    [{ maxWaitMs: -1 }, /`maxWaitMs` must be a finite number of ms >= 0; got -1/],
    [{ maxWaitMs: Infinity }, /`maxWaitMs` must be a finite number of ms >= 0; got Infinity/],
    [{ maxWaitMs: '1s' }, /`maxWaitMs` must be a finite number of ms >= 0; got "1s"/],
    [{ signal: 'stop' }, /`signal` must be an AbortSignal; got "stop"/],
    ['fast', /`options` must be an object \{ cost, maxWaitMs, signal \}; got "fast"/],
  ])('%p', async (options, message) => {
    const call = limiter.wait('k', options as never)
    await expect(call).rejects.toThrow(SluiceError)
    await expect(limiter.wait('k', options as never)).rejects.toThrow(message)
  })

  test('a key that is not a string', async () => {
    await expect(limiter.wait(7 as unknown as string)).rejects.toThrow(
      /`key` must be a string; got 7/,
    )
  })
})

describe('wait: abort', () => {
  test('a signal aborted before the call rejects with its reason and takes nothing', async () => {
    const { limiter } = limiterAt(T0, { algorithm: 'gcra', limit: 10, window: 1000, burst: 1 })
    const reason = new Error('shutting down')
    await expect(limiter.wait('k', { signal: AbortSignal.abort(reason) })).rejects.toBe(reason)
    expect((await limiter.get('k')).remaining).toBe(1)
  })

  test('aborting while held gives the slot back and rejects with an AbortError', async () => {
    // The fake clock stands still (exact delays); the holds themselves are real timers.
    const { limiter } = limiterAt(T0, { algorithm: 'gcra', limit: 20, window: 1000, burst: 1 })
    await limiter.wait('k') // takes the burst
    const controller = new AbortController()
    const held = limiter.wait('k', { maxWaitMs: 1000, signal: controller.signal })
    const next = limiter.wait('k', { maxWaitMs: 1000 }) // queued behind it: 100 ms
    setTimeout(() => controller.abort(), 10)
    const error = await held.then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(SluiceError)
    expect(error).toMatchObject({ name: 'AbortError', code: 'ERR_SLUICE_ABORTED' })
    expect((await next).delayMs).toBe(100)
    // The aborted slot went back, so the schedule is one slot shorter: on the unmoved clock a
    // newcomer queues 100 ms out (without the refund it would be 150 ms).
    const third = await limiter.wait('k', { maxWaitMs: 1000 })
    expect(third).toMatchObject({ allowed: true, delayMs: 100 })
  })

  test('the slot given back is free for the next caller', async () => {
    const { limiter, clock } = limiterAt(T0, {
      algorithm: 'gcra',
      limit: 10,
      window: 1000,
      burst: 1,
    })
    await limiter.wait('k')
    const controller = new AbortController()
    const held = limiter.wait('k', { maxWaitMs: 1000, signal: controller.signal })
    controller.abort(new Error('gone'))
    await expect(held).rejects.toThrow('gone')
    // Without the refund the next reservation would be 200 ms away, past maxWaitMs.
    const next = await limiter.wait('k', { maxWaitMs: 150 })
    expect(next).toMatchObject({ allowed: true, delayMs: 100 })
    expect(clock.now).toBe(T0)
  })
})

describe('wait: ordering and fairness on a real clock', () => {
  test('N concurrent waiters are released at the policy pace, none early', async () => {
    // 20 a second, burst 1: one release every 50 ms.
    const store = new MemoryStore()
    const limiter = createLimiter({ algorithm: 'gcra', limit: 20, window: 1000, burst: 1, store })
    const n = 8
    const started = Date.now()
    const releases: Array<{ i: number; at: number; decision: Decision }> = []
    await Promise.all(
      Array.from({ length: n }, (_, i) =>
        limiter.wait('k', { maxWaitMs: 1000 }).then((decision) => {
          releases.push({ i, at: Date.now(), decision })
        }),
      ),
    )
    expect(releases).toHaveLength(n)
    // First come, first served: released in the order they asked.
    expect(releases.map((r) => r.i)).toEqual(Array.from({ length: n }, (_, i) => i))
    for (const { i, at, decision } of releases) {
      expect(decision.allowed).toBe(true)
      // Each reserved slot is 50 ms after the one before (the calls may straddle a ms tick).
      expect(decision.at + decision.delayMs).toBe(releases[0].decision.at + i * 50)
      // None early: each is released no sooner than its reserved slot.
      expect(at).toBeGreaterThanOrEqual(decision.at + decision.delayMs - 1)
      expect(at - started).toBeGreaterThanOrEqual(i * 50 - 1)
    }
  })

  test('waiters beyond maxWaitMs are refused at once and do not delay the others', async () => {
    const { limiter } = limiterAt(T0, {
      algorithm: 'leaky-bucket',
      limit: 20,
      window: 1000,
      burst: 1,
    })
    const results = await Promise.all(
      Array.from({ length: 6 }, () => limiter.wait('k', { maxWaitMs: 100 })),
    )
    expect(results.map((d) => d.allowed)).toEqual([true, true, true, false, false, false])
    expect(results.slice(0, 3).map((d) => d.delayMs)).toEqual([0, 50, 100])
  })
})
