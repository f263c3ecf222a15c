// An adapter's default clock: read on each decision (one per request), monotonic on an
// in-process store and the wall clock on a shared one; an injected clock is kept.
import { MemoryStore, monotonicClock, systemClock } from '@sluice/core'
import { setMonotonicSource, type MonotonicSource } from '@sluice/core/adapter'
import { createHttpLimiter, type HttpRequestLike } from '@sluice/http'
import { DEFAULTS, RES } from './pipeline-fixtures'

const REQ: HttpRequestLike = { ip: '10.0.0.1', headers: {} }

let restore: MonotonicSource | undefined | null = null
afterEach(() => {
  jest.restoreAllMocks()
  if (restore !== null) setMonotonicSource(restore)
  restore = null
})

test('the default clock: monotonic on an in-process store, Date.now on a shared one', () => {
  expect(createHttpLimiter({ limit: 1 }, DEFAULTS).limiter!.clock).toBe(monotonicClock)
  const shared = new MemoryStore()
  Object.defineProperty(shared, 'local', { value: false })
  expect(createHttpLimiter({ limit: 1, store: shared }, DEFAULTS).limiter!.clock).toBe(systemClock)
  const injected = () => 5
  expect(createHttpLimiter({ limit: 1, clock: injected }, DEFAULTS).limiter!.clock).toBe(injected)
})

test('each request reads the clock, also within one synchronous turn', () => {
  let elapsed = 0
  restore = setMonotonicSource({ timeOrigin: 1_000_000, now: () => elapsed })
  const http = createHttpLimiter({ limit: 10, window: '1m', algorithm: 'fixed-window' }, DEFAULTS)
  const first = http.decideNow(REQ, RES)
  elapsed = 250
  const second = http.decideNow(REQ, RES)
  if ('then' in first || 'then' in second) throw new Error('decided later')
  if (first.action !== 'allow' || second.action !== 'allow') throw new Error('not admitted')
  expect([first.decision.at, second.decision.at]).toEqual([1_000_000, 1_000_250])
  expect([first.decision.remaining, second.decision.remaining]).toEqual([9, 8])
})

test('a wall clock stepped back and forward gives a server no new quota', async () => {
  const origin = Date.now()
  restore = setMonotonicSource({ timeOrigin: origin, now: () => 0 })
  let wall = origin
  jest.spyOn(Date, 'now').mockImplementation(() => wall)
  const http = createHttpLimiter({ limit: 3, window: 1000, algorithm: 'fixed-window' }, DEFAULTS)
  const admitted = async () => {
    let count = 0
    for (let i = 0; i < 5; i++) if ((await http.decide(REQ, RES)).action === 'allow') count++
    return count
  }
  expect(await admitted()).toBe(3)
  wall -= 1000
  expect(await admitted()).toBe(0)
  wall += 4000
  expect(await admitted()).toBe(0)
})
