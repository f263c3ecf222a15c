import { turnClock } from '@sluice/core'

describe('turnClock, the default clock', () => {
  test('answers one instant for a whole synchronous turn', () => {
    const first = turnClock()
    // The system clock moves on (well under a millisecond of spinning), the turn does not end.
    while (Date.now() <= first) {
      // spin
    }
    expect(turnClock()).toBe(first)
  })

  test('reads the system clock again once the turn has ended', async () => {
    const first = turnClock()
    while (Date.now() <= first) {
      // spin
    }
    await null // a microtask checkpoint ends the turn
    const next = turnClock()
    expect(next).toBeGreaterThan(first)
    expect(next).toBeLessThanOrEqual(Date.now())
  })
})
