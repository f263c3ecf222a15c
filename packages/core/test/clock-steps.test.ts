import { ALGORITHMS, createLimiter } from '@sluice/core'

// A clock stepped back (an NTP correction, a VM restored from a snapshot, an injected clock)
// must not reopen windows already spent; one stepped forward is time that passed.
describe.each(ALGORITHMS)('%s on the memory store', (algorithm) => {
  test('stepping back 1 s, then 2 s more, admits nothing beyond the limit', async () => {
    let now = 100_000
    const limiter = createLimiter({ algorithm, limit: 20, window: 1000, clock: () => now })
    const burst = async (): Promise<number> => {
      let admitted = 0
      for (let i = 0; i < 40; i++) if ((await limiter.consume('k')).allowed) admitted++
      return admitted
    }
    expect(await burst()).toBe(20)
    now -= 1000
    expect(await burst()).toBe(0)
    now -= 2000
    expect(await burst()).toBe(0)
    // Forward past where the clock had been and two windows more (sliding-window still weighs
    // the previous one): the limit is whole again.
    now += 5000
    expect(await burst()).toBe(20)
  })
})
