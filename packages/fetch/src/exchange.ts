/**
 * Owns the Fetch adapters' side of the pipeline's response seam (core's ResponseLike): one
 * exchange per request, closed once, when the handler's Response is known or the client's
 * request signal aborts, so refunds and holds work as on Node.
 */
import type { ResponseLike } from '@sluice/http'

export class FetchExchange implements ResponseLike {
  writableFinished = false
  destroyed = false
  statusCode = 200
  /** The handler's Response, once known (what `requestWasSuccessful` is given). */
  response: Response | undefined = undefined
  private listeners: Array<() => void> = []

  constructor(signal: AbortSignal | undefined) {
    if (signal?.aborted) this.destroyed = true
    else signal?.addEventListener('abort', () => this.close(true), { once: true })
  }

  once(_event: 'close', listener: () => void): this {
    if (this.destroyed || this.writableFinished) queueMicrotask(listener)
    else this.listeners.push(listener)
    return this
  }

  off(_event: 'close', listener: () => void): this {
    this.listeners = this.listeners.filter((l) => l !== listener)
    return this
  }

  /** The handler answered (or threw: a 500, as a Node server would send). */
  finish(response: Response | undefined, status = response?.status ?? 500): void {
    if (this.destroyed || this.writableFinished) return
    this.response = response
    this.statusCode = status
    this.close(false)
  }

  private close(aborted: boolean): void {
    if (this.destroyed || this.writableFinished) return
    if (aborted) this.destroyed = true
    else this.writableFinished = true
    const listeners = this.listeners
    this.listeners = []
    for (const listener of listeners) listener()
  }
}
