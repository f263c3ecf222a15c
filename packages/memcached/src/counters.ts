/**
 * Owns the counters on memcached (fixed-window, sliding-window): one item per time bucket,
 * raised by atomic increment and rolled back by decrement when a concurrent increment pushed
 * a count past its limit.
 */
import type { PolicyOutcome } from '@sluice/core'
import { bucketKey, counterCounts, counterTtlSeconds, type Part } from './layout'
import { currentCount, decide, readKeys, readState, setCurrentCount } from './state'
import type { Wire } from './wire'

export class Counters {
  constructor(private readonly wire: Wire) {}

  /**
   * Raises every counter's current bucket by `cost`. True when each still admits the request
   * with what the increments returned; otherwise the increments are taken back and the
   * counters' outcomes replaced by rejections computed from the counts seen.
   */
  async increment(
    route: string,
    parts: readonly Part[],
    states: readonly number[][],
    outcomes: PolicyOutcome[],
    now: number,
    cost: number,
  ): Promise<boolean> {
    const counters = parts.flatMap((part, i) => (part.counter ? [i] : []))
    if (counters.length === 0) return true
    const names = counters.map((i) => bucketKey(parts[i], Math.floor(now / parts[i].size)))
    const values = await Promise.all(
      counters.map((i, n) =>
        this.wire.increment(route, names[n], cost, counterTtlSeconds(parts[i].policy)),
      ),
    )
    // What each increment should return if no other process touched the bucket since the read
    // (policies sharing an id raise the same bucket once each).
    const raised = new Map<string, number>()
    let admitted = true
    counters.forEach((i, n) => {
      const ours = (raised.get(names[n]) ?? 0) + cost
      raised.set(names[n], ours)
      const part = parts[i]
      const before = currentCount(part, states[i])
      if (values[n] === before + ours) return
      // Others counted in between: decide again on the count as it stood just before ours.
      const state = states[i].slice()
      setCurrentCount(part, state, Math.max(0, values[n] - ours))
      const again = decide(part, state, now, cost)
      outcomes[i] = again
      if (!again.allowed) admitted = false
    })
    if (admitted) return true
    await Promise.all(names.map((name) => this.wire.decrement(route, name, cost))).catch(
      () => undefined,
    )
    return false
  }

  async refund(
    route: string,
    parts: readonly Part[],
    now: number,
    cost: number,
    at: number,
  ): Promise<void> {
    const names: string[] = []
    for (const part of parts) {
      if (!part.counter) continue
      const bucket = Math.floor(at / part.size)
      const current = Math.floor(now / part.size)
      // Never into a bucket that no longer counts (a window that has reset) or the future.
      if (bucket < current - part.older || bucket > current) continue
      names.push(bucketKey(part, bucket))
    }
    await Promise.all(names.map((name) => this.wire.decrement(route, name, cost)))
  }

  /**
   * Penalties and rewards on counters: core's transition on the counts read, then each bucket
   * raised (increment) or lowered (decrement, which stops at 0) by the difference. Not atomic
   * with other processes' increments: a concurrent request may land between the read and the
   * write, so a penalty can overshoot full by what was admitted in between (docs/memcached.md).
   */
  async adjust(
    route: string,
    parts: readonly Part[],
    now: number,
    change: (part: Part, state: number[]) => void,
  ): Promise<void> {
    const counters = parts.filter((part) => part.counter)
    if (counters.length === 0) return
    const items = await this.wire.getMulti(route, readKeys(counters, now))
    const deltas = new Map<string, { delta: number; part: Part }>()
    for (const part of counters) {
      const state = readState(part, items, now)
      const before = counterCounts(part, state, now)
      change(part, state)
      for (const [bucket, count] of counterCounts(part, state, now)) {
        const delta = count - (before.get(bucket) ?? 0)
        if (delta === 0) continue
        const name = bucketKey(part, bucket)
        const entry = deltas.get(name) ?? { delta: 0, part }
        entry.delta += delta
        deltas.set(name, entry)
      }
    }
    await Promise.all(
      [...deltas].map(([name, { delta, part }]) =>
        delta > 0
          ? this.wire.increment(route, name, delta, counterTtlSeconds(part.policy))
          : this.wire.decrement(route, name, -delta),
      ),
    )
  }
}
