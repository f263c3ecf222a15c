/**
 * Owns the meters on memcached (token-bucket, gcra, leaky-bucket): one item per key and
 * policy, rewritten by compare-and-swap, with updates of one key serialized in this process.
 */
import { SerialQueues } from '@sluice/core/adapter'
import { CONFLICT, type Item, type Wire } from './wire'
import { encodeMeter, type Part } from './layout'
import { contention, meterState, meterTtl, type MeterWrite } from './state'

export class Meters {
  /** Meter updates of one key, one after another in this process (see SerialQueues). */
  private readonly queues = new SerialQueues()

  constructor(
    private readonly wire: Wire,
    private readonly casAttempts: number,
  ) {}

  serial<T>(route: string, task: () => Promise<T>): Promise<T> {
    return this.queues.run(route, task)
  }

  /**
   * Applies the request to every meter (policies sharing an id share an item) and writes each
   * item back by CAS. On a lost race the items already written are given back; CONFLICT then.
   */
  async write(
    route: string,
    parts: readonly Part[],
    states: readonly number[][],
    items: ReadonlyMap<string, Item>,
    now: number,
    cost: number,
  ): Promise<void | typeof CONFLICT> {
    const writes = new Map<string, MeterWrite>()
    parts.forEach((part, i) => {
      if (part.counter) return
      let write = writes.get(part.base)
      if (write === undefined) {
        write = { key: part.base, state: states[i], cas: items.get(part.base)?.cas, parts: [] }
        writes.set(part.base, write)
      }
      part.algorithm.apply(write.state, 0, now, part.policy, cost)
      write.parts.push(part)
    })
    if (writes.size === 0) return
    const results = await this.writeBack(route, [...writes.values()], now)
    if (results.every((result) => result === true)) return
    const won = [...writes.values()].filter((_, i) => results[i] === true).flatMap((w) => w.parts)
    await this.refund(route, won, now, cost, now, false).catch(() => undefined)
    return CONFLICT
  }

  /**
   * Applies `change` to every meter by CAS, retrying the items that lost a race; `create`: a
   * missing item starts from the empty state (penalize) instead of being left alone (reward).
   */
  async update(
    route: string,
    parts: readonly Part[],
    now: number,
    change: (part: Part, state: number[]) => void,
    strict: boolean,
    create: boolean,
  ): Promise<void> {
    let pending = parts.filter((part) => !part.counter)
    for (let attempt = 1; pending.length > 0; attempt++) {
      if (attempt > this.casAttempts) {
        if (strict) throw contention(this.casAttempts)
        return
      }
      const items = await this.wire.getMulti(route, [...new Set(pending.map((p) => p.base))])
      const writes = new Map<string, MeterWrite>()
      for (const part of pending) {
        const item = items.get(part.base)
        if (item === undefined && !create) continue
        let write = writes.get(part.base)
        if (write === undefined) {
          const state =
            item === undefined
              ? new Array<number>(part.algorithm.slots(part.policy)).fill(0)
              : meterState(part, item)
          write = { key: part.base, state, cas: item?.cas, parts: [] }
          writes.set(part.base, write)
        }
        change(part, write.state)
        write.parts.push(part)
      }
      const list = [...writes.values()]
      const results = await this.writeBack(route, list, now)
      pending = list.filter((_, i) => results[i] !== true).flatMap((write) => write.parts)
    }
  }

  /**
   * Gives `cost` back to each meter by CAS, retrying the items that lost a race. `strict`
   * (a caller's refund) reports contention; a rollback gives up quietly, leaving the meter
   * fuller than it should be: that can only reject more, never admit more.
   */
  refund(
    route: string,
    meters: readonly Part[],
    now: number,
    cost: number,
    at: number | undefined,
    strict: boolean,
  ): Promise<void> {
    // Nothing to give back to a meter that is gone (expired, reset): no item is created.
    return this.update(
      route,
      meters,
      now,
      (part, state) => part.algorithm.refund(state, 0, now, part.policy, cost, at),
      strict,
      false,
    )
  }

  /** Each write by compare-and-swap, at once: true for those that won. */
  private writeBack(
    route: string,
    writes: readonly MeterWrite[],
    now: number,
  ): Promise<Array<true | typeof CONFLICT>> {
    return Promise.all(
      writes.map((write) =>
        this.wire.compareAndSet(
          route,
          write.key,
          encodeMeter(write.state),
          meterTtl(write, now),
          write.cas,
        ),
      ),
    )
  }
}
