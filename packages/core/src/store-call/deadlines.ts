// Store-call deadlines: one FIFO and one timer per timeoutMs for every call in flight; a timer
// per call where timers end with the request that set them (Cloudflare Workers).
import { StoreError, withoutStack } from '../errors'
import { onCloudflareWorkers } from '../runtime'
import { unrefTimer } from '../timers'

/** A store call in flight: when it must have settled, and how to fail it if it has not. */
export interface PendingCall {
  readonly deadline: number
  settled: boolean
  reject: (error: StoreError) => void
}

/** Where a limiter's store calls get their deadlines: one per `timeoutMs` value. */
export interface Deadlines {
  /** A call just sent: `reject` fails it once its `timeoutMs` has passed unsettled. */
  add(reject: (error: StoreError) => void): PendingCall
  /** The call settled in time: its deadline is dropped. */
  settle(call: PendingCall): void
}

const ignore = (): void => {}

/** What a slot of the queue holds once its call is behind the head: nothing of the call. */
const PASSED: PendingCall = { deadline: 0, settled: true, reject: ignore }

/**
 * The deadlines of store calls in flight that share one `timeoutMs`: they arrive in order, so
 * one FIFO and one timer, armed for the oldest unsettled call, replace a setTimeout and a
 * clearTimeout per call (a measurable share of a Redis decision at tens of thousands a second).
 * The timer is unref'd: the store's own connection keeps the process alive while a call is out.
 */
export class DeadlineQueue implements Deadlines {
  private calls: PendingCall[] = []
  private head = 0
  private timer: NodeJS.Timeout | undefined

  constructor(private readonly timeoutMs: number) {}

  add(reject: (error: StoreError) => void): PendingCall {
    const call: PendingCall = {
      deadline: performance.now() + this.timeoutMs,
      settled: false,
      reject,
    }
    this.calls.push(call)
    if (this.timer === undefined) this.arm(this.timeoutMs)
    return call
  }

  /**
   * Marks a call done; calls settle mostly in order, so the front is trimmed as they do. Under
   * steady load the queue is seldom empty, so neither a settled call nor its `reject` (which
   * holds the caller's promise and, through it, the request) may stay reachable from it: held
   * for the next thousand calls, each would outlive young-generation collections and be
   * promoted (a fifth of what a Fastify server over Redis promoted per scavenge, measured).
   */
  settle(call: PendingCall): void {
    call.settled = true
    call.reject = ignore
    this.trim()
  }

  private trim(): void {
    const calls = this.calls
    while (this.head < calls.length && calls[this.head].settled) calls[this.head++] = PASSED
    if (this.head === calls.length) {
      calls.length = 0
      this.head = 0
    } else if (this.head > 1024 && this.head * 2 > calls.length) {
      this.calls = calls.slice(this.head)
      this.head = 0
    }
  }

  private arm(ms: number): void {
    this.timer = setTimeout(this.expire, Math.max(1, Math.ceil(ms)))
    unrefTimer(this.timer)
  }

  private readonly expire = (): void => {
    this.timer = undefined
    const now = performance.now()
    this.trim()
    while (this.head < this.calls.length) {
      const call = this.calls[this.head]
      if (!call.settled) {
        if (call.deadline > now) return this.arm(call.deadline - now)
        const reject = call.reject
        call.settled = true
        call.reject = ignore
        reject(this.timeoutError())
      }
      this.calls[this.head++] = PASSED
    }
    this.trim()
  }

  private timeoutError(): StoreError {
    return timeoutError(this.timeoutMs)
  }
}

/** Raised from a timer, a stack would only show the timer (see withoutStack). */
function timeoutError(timeoutMs: number): StoreError {
  return withoutStack(
    () =>
      new StoreError(`store call took longer than timeoutMs (${timeoutMs} ms)`, {
        code: 'ERR_SLUICE_STORE_TIMEOUT',
      }),
  )
}

/** A call with a timer of its own (RequestDeadlines). */
interface TimedCall extends PendingCall {
  timer: ReturnType<typeof setTimeout> | undefined
}

/**
 * A timer per call, armed in the request that made the call. Cloudflare Workers end a
 * request's timers with it (in workerd, a timer set by a request that has returned never
 * fires, even while other requests run): a timer shared by the calls of several requests died
 * with the first of them, and no call of that isolate timed out again.
 */
export class RequestDeadlines implements Deadlines {
  constructor(private readonly timeoutMs: number) {}

  add(reject: (error: StoreError) => void): PendingCall {
    const call: TimedCall = {
      deadline: performance.now() + this.timeoutMs,
      settled: false,
      reject,
      timer: undefined,
    }
    call.timer = setTimeout(() => {
      if (call.settled) return
      call.settled = true
      call.reject = ignore
      reject(timeoutError(this.timeoutMs))
    }, this.timeoutMs)
    return call
  }

  settle(call: PendingCall): void {
    call.settled = true
    call.reject = ignore
    clearTimeout((call as TimedCall).timer)
  }
}

const deadlineQueues = new Map<number, Deadlines>()

/** The deadlines of calls that share one `timeoutMs`: process-wide, or per call on Workers. */
export function deadlinesFor(timeoutMs: number): Deadlines {
  let queue = deadlineQueues.get(timeoutMs)
  if (queue === undefined) {
    queue = onCloudflareWorkers() ? new RequestDeadlines(timeoutMs) : new DeadlineQueue(timeoutMs)
    deadlineQueues.set(timeoutMs, queue)
  }
  return queue
}
