/**
 * Owns running a store's calls for one key one after another in this process: a store that
 * decides by compare-and-set (MemcachedStore's meters, RedisStore's wide limits) would
 * otherwise see the calls in flight together on a hot key all read the same state and all but
 * one lose the race, over and over (measured on memcached: most calls failing with 50 in
 * flight). Compare-and-set is then left to arbitrate between processes only.
 */
export class SerialQueues {
  /** Tail of the queue per key: settles when the last task queued there has. */
  private readonly tails = new Map<string, Promise<void>>()

  /** Runs `task` once every task queued before it for `key` has settled. */
  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key)
    const run = previous === undefined ? task() : previous.then(task)
    const tail = run.then(
      () => undefined,
      () => undefined,
    )
    this.tails.set(key, tail)
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key)
    })
    return run
  }
}
