import type { Policy, StoreRequest } from '@sluice/core'
import { ChargeTimes, MAX_CHARGES } from '../src/charge-times'

// What a store on Redis's clock remembers of its sliding-log charges (charge-times.ts): at
// most MAX_CHARGES request times, the oldest forgotten first, so that a refund lands where
// Redis logged the charge while it is remembered.

const policies: Policy[] = []
const request = (key: string, now: number, cost = 1): StoreRequest => ({
  key,
  policies,
  cost,
  now,
})
const admitted = {
  outcomes: [{ allowed: true, remaining: 0, resetMs: 0, retryAfterMs: 0, delayMs: 0 }],
}

/** The Redis time remembered for the charge `key` made at `now`, or `now` when forgotten. */
function redisTimeOf(charges: ChargeTimes, key: string, now: number): number {
  return charges.exact({ ...request(key, now + 5), at: now }).now
}

describe('ChargeTimes', () => {
  test('a refund takes the Redis time of its charge, once', () => {
    const charges = new ChargeTimes()
    charges.admitted(request('a', 100), { ...admitted, at: 7 })
    charges.admitted(request('a', 100), { ...admitted, at: 9 })
    expect(redisTimeOf(charges, 'a', 100)).toBe(7)
    expect(redisTimeOf(charges, 'a', 100)).toBe(9)
    expect(redisTimeOf(charges, 'a', 100)).toBe(105)
  })

  test('a refused or unmeasured consume is not remembered', () => {
    const charges = new ChargeTimes()
    charges.admitted(request('a', 100), {
      outcomes: [{ ...admitted.outcomes[0], allowed: false }],
      at: 7,
    })
    charges.admitted(request('b', 100), admitted)
    expect(redisTimeOf(charges, 'a', 100)).toBe(105)
    expect(redisTimeOf(charges, 'b', 100)).toBe(105)
  })

  test('past MAX_CHARGES the oldest are forgotten first, round after round', () => {
    const charges = new ChargeTimes()
    // Three times the bound, some taken back on the way (holes among the oldest).
    const total = 3 * MAX_CHARGES
    for (let i = 0; i < total; i++) {
      charges.admitted(request(`k${i}`, i), { ...admitted, at: 1_000_000 + i })
      if (i % 7 === 0) expect(redisTimeOf(charges, `k${i}`, i)).toBe(1_000_000 + i)
    }
    // The newest MAX_CHARGES ids not taken back are held; every older one is forgotten.
    const held = (i: number): boolean => i % 7 !== 0
    const newest = []
    for (let i = total - 1; newest.length < MAX_CHARGES; i--) if (held(i)) newest.push(i)
    const oldestHeld = Math.min(...newest)
    expect(redisTimeOf(charges, `k${oldestHeld}`, oldestHeld)).toBe(1_000_000 + oldestHeld)
    let before = oldestHeld - 1
    while (!held(before)) before--
    expect(redisTimeOf(charges, `k${before}`, before)).toBe(before + 5)
    expect(redisTimeOf(charges, `k${total - 1}`, total - 1)).toBe(1_000_000 + total - 1)
  })
})
