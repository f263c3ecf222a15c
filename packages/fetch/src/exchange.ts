/**
 * Owns the Fetch adapters' side of the pipeline's response seam (core's ResponseLike): one
 * exchange per request, closed once, when the response is over (the handler's Response is
 * known, or its body has been sent when the request holds a concurrency slot) or the client's
 * request signal aborts, so refunds, holds and slots work as on Node.
 */
import type { ResponseLike } from '@sluice/http'
import { watchBody } from './body'

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

  /**
   * The handler answered with `response`, sent as `sent` (the same, or a copy with headers): the
   * exchange closes when that body has been read to its end (finished), errors or is cancelled
   * (the client left, as an aborted Node response). Returns the Response to send in `sent`'s
   * place. A body-less Response closes at once, as does one whose body is already taken.
   */
  finishWhenSent(response: Response, sent: Response): Response {
    if (sent.body === null || sent.bodyUsed || sent.body.locked) {
      this.finish(response)
      return sent
    }
    if (this.destroyed || this.writableFinished) return sent
    this.response = response
    this.statusCode = response.status
    const body = watchBody(sent.body, (complete) => this.close(!complete))
    return new Response(body, sent)
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
