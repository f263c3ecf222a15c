/**
 * Owns a limiter's concurrency slots: acquiring one (waiting first come, first served when
 * `maxWaitMs` allows), the lease renewed while the request runs, and a release that happens
 * exactly once. Every store call goes through the limiter's guard (timeout, breaker); a slot a
 * store grants after its call timed out is given back at once, so a hang never leaks one.
 */
import type { Clock } from '../clock'
import type { WaitUntil } from '../options'
import { boundedStoreCall, type StoreGuard } from '../store-call/bounded'
import type { StoreLogger } from '../store-call/health'
import type { ConcurrencyPolicy } from './policy'
import type { SlotLease, SlotReply, SlotRequest, SlotStore } from './slots'

/** What acquiring a slot answered. */
export interface SlotAttempt {
  readonly lease: SlotLease | undefined
  /** Slots of the key taken after the attempt. */
  readonly inFlight: number
}

/** How often a waiting request asks the store again, for slots freed by other processes. */
const POLL_MS = 25

let holders = 0
let processId: string | undefined

/** Random per process, made on first use: holders of different processes never collide. */
function holderPrefix(): string {
  if (processId === undefined) {
    const crypto = (globalThis as { crypto?: { randomUUID?: () => string } }).crypto
    processId =
      crypto?.randomUUID !== undefined
        ? crypto.randomUUID().slice(0, 13)
        : `${Math.random().toString(36).slice(2, 10)}${Date.now().toString(36)}`
  }
  return processId
}

interface Waiter {
  readonly wake: () => void
}

export class ConcurrencyGate {
  /** Slots this limiter holds right now in this process. */
  held = 0
  /** Requests waiting for a slot right now. */
  waiting = 0
  /** Releases that found nothing to release: a second call, or a lease that had lapsed. */
  ignoredReleases = 0
  private readonly queues = new Map<string, Waiter[]>()
  /** A renewal or release failed and none has succeeded since: logged once. */
  private failing = false

  constructor(
    readonly policy: ConcurrencyPolicy,
    private readonly slots: SlotStore,
    private readonly guard: StoreGuard | undefined,
    private readonly clock: Clock,
    private readonly logger: StoreLogger,
  ) {}

  /**
   * A slot for `key`, waiting for one up to `maxWaitMs`; rejects with the store's failure.
   * `waitUntil` (ConsumeOptions) keeps a timed-out attempt's late reply running.
   */
  async acquire(key: string, waitUntil?: WaitUntil): Promise<SlotAttempt> {
    const first = await this.tryAcquire(key, waitUntil)
    const { maxWaitMs, maxWaiting } = this.policy
    if (first.lease !== undefined || maxWaitMs === 0 || this.waiting >= maxWaiting) return first
    return this.wait(key, performance.now() + maxWaitMs, first, waitUntil)
  }

  /** Slots of `key` taken now. */
  count(key: string): Promise<number> {
    return boundedStoreCall(() => this.slots.count(key, this.clock()), this.guard)
  }

  private async wait(
    key: string,
    deadline: number,
    last: SlotAttempt,
    waitUntil: WaitUntil | undefined,
  ): Promise<SlotAttempt> {
    let queue = this.queues.get(key)
    if (queue === undefined) this.queues.set(key, (queue = []))
    let wake!: () => void
    const waiter: Waiter = { wake: () => wake() }
    queue.push(waiter)
    this.waiting++
    try {
      for (;;) {
        const left = deadline - performance.now()
        if (left <= 0) return last
        // Only the head of the queue asks: first come, first served within this process.
        await new Promise<void>((resolve) => {
          const ms = queue[0] === waiter ? Math.min(POLL_MS, left) : left
          const timer = setTimeout(done, ms)
          timer.unref?.()
          function done(): void {
            clearTimeout(timer)
            resolve()
          }
          wake = done
        })
        if (queue[0] !== waiter) continue
        last = await this.tryAcquire(key, waitUntil)
        if (last.lease !== undefined) return last
      }
    } finally {
      this.waiting--
      queue.splice(queue.indexOf(waiter), 1)
      if (queue.length === 0) this.queues.delete(key)
      else queue[0].wake() // the next in line asks at once
    }
  }

  private async tryAcquire(key: string, waitUntil: WaitUntil | undefined): Promise<SlotAttempt> {
    const request: SlotRequest = {
      key,
      holder: `${holderPrefix()}:${++holders}`,
      limit: this.policy.limit,
      leaseMs: this.policy.leaseMs,
      now: this.clock(),
    }
    const reply = await boundedStoreCall(
      () => this.slots.acquire(request),
      this.guard,
      (late: SlotReply) =>
        // Granted after the caller was answered without the store: nobody holds it.
        late.acquired ? this.send(() => this.slots.release(this.at(request)), true) : undefined,
      false,
      waitUntil,
    )
    if (!reply.acquired) return { lease: undefined, inFlight: reply.inFlight }
    this.held++
    return { lease: this.lease(request), inFlight: reply.inFlight }
  }

  /** The request at the current time (renewals and releases carry their own `now`). */
  private at(request: SlotRequest): SlotRequest {
    return { ...request, now: this.clock() }
  }

  /**
   * A renewal or release; a failure is logged once until a call succeeds again (an outage
   * fails every renewal of every held slot), and the slot then lapses with its lease.
   */
  private send<T>(call: () => Promise<T>, always = false): Promise<T | undefined> {
    return boundedStoreCall(call, this.guard, undefined, always).then(
      (value) => {
        this.failing = false
        return value
      },
      (error: unknown) => {
        if (!this.failing) {
          this.failing = true
          this.logger.warn(
            `[sluice] a concurrency slot renewal or release failed (its lease lapses after leaseMs; logged once until one succeeds): ${String(error)}`,
          )
        }
        return undefined
      },
    )
  }

  private lease(request: SlotRequest): SlotLease {
    let released = false
    const renewal = setInterval(() => {
      void this.send(() => this.slots.renew(this.at(request)))
    }, request.leaseMs / 3)
    renewal.unref?.()
    const release = (): Promise<void> => {
      if (released) {
        this.ignoredReleases++
        return Promise.resolve()
      }
      released = true
      clearInterval(renewal)
      this.held--
      // `always`: a slot is given back even while the breaker is open (else it waits for its lease).
      return this.send(() => this.slots.release(this.at(request)), true).then((held) => {
        if (held === false) this.ignoredReleases++
        // Wake after the store has it back: the head then finds the slot free.
        this.queues.get(request.key)?.[0]?.wake()
      })
    }
    return {
      get released() {
        return released
      },
      release,
    }
  }
}
