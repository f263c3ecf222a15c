import { ALGORITHMS, createLimiter, MemoryStore, monotonicTurnClock, turnClock } from '@sluice/core'
import { setMonotonicSource, type MonotonicSource } from '@sluice/core/adapter'

/** How many of 40 consumes in a row on one key the limiter admits. */
async function burst(limiter: ReturnType<typeof createLimiter>): Promise<number> {
  let admitted = 0
  for (let i = 0; i < 40; i++) if ((await limiter.consume('k')).allowed) admitted++
  return admitted
}

// A clock stepped back (an NTP correction, a VM restored from a snapshot, an injected clock)
// must not reopen windows already spent; one stepped forward is time that passed.
describe.each(ALGORITHMS)('%s on the memory store', (algorithm) => {
  test('stepping back 1 s, then 2 s more, admits nothing beyond the limit', async () => {
    let now = 100_000
    const limiter = createLimiter({ algorithm, limit: 20, window: 1000, clock: () => now })
    expect(await burst(limiter)).toBe(20)
    now -= 1000
    expect(await burst(limiter)).toBe(0)
    now -= 2000
    expect(await burst(limiter)).toBe(0)
    // Forward past where the clock had been and two windows more (sliding-window still weighs
    // the previous one): the limit is whole again.
    now += 5000
    expect(await burst(limiter)).toBe(20)
  })
})

// The default clock of a limiter on the memory store is monotonic: a test cannot step the
// machine's wall clock, so it steps Date.now and holds the monotonic source still.
describe.each(ALGORITHMS)('%s on the memory store with the default clock', (algorithm) => {
  let restore: MonotonicSource | undefined | null = null
  afterEach(() => {
    jest.restoreAllMocks()
    if (restore !== null) setMonotonicSource(restore)
  })

  test('a wall clock stepped back, then forward by three windows, gives no new quota', async () => {
    const origin = Date.now()
    restore = setMonotonicSource({ timeOrigin: origin, now: () => 0 })
    let wall = origin
    jest.spyOn(Date, 'now').mockImplementation(() => wall)
    const limiter = createLimiter({ algorithm, limit: 20, window: 1000 })
    expect(await burst(limiter)).toBe(20)
    wall -= 1000
    expect(await burst(limiter)).toBe(0)
    wall += 4000
    expect(await burst(limiter)).toBe(0)
    // The monotonic source moving on is time that passed.
    setMonotonicSource({ timeOrigin: origin, now: () => 5000 })
    expect(await burst(limiter)).toBe(20)
  })

  test('a limiter on a shared store keeps the wall clock (processes must agree)', () => {
    const shared = new MemoryStore()
    Object.defineProperty(shared, 'local', { value: false })
    expect(createLimiter({ limit: 1, window: 1000, store: shared }).clock).toBe(turnClock)
    expect(createLimiter({ limit: 1, window: 1000 }).clock).toBe(monotonicTurnClock)
  })
})
