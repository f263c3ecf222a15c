/**
 * Owns what follows a response's close: an admitted request's concurrency slot given back
 * (finished, failed or abandoned by the client, the response closes once, and so the slot goes
 * back once), a queued request's wait aborted when its client leaves, and the close a refund
 * waits for.
 */
import { SluiceError, type SlotLease } from '@sluice/core/web'
import type { ResponseLike } from './types'

/** Releases `slot` when `res` closes (at once if it already has). */
export function releaseOnClose(res: ResponseLike, slot: SlotLease): void {
  const release = (): void => void slot.release()
  if (res.destroyed || res.writableFinished) release()
  else res.once('close', release)
}

/** An AbortSignal that fires when the response closes before it finished (the client left). */
export function holdSignal(res: ResponseLike): { signal: AbortSignal; release: () => void } {
  const controller = new AbortController()
  const onClose = () => {
    if (!res.writableFinished)
      controller.abort(new SluiceError('ERR_SLUICE_ABORTED', 'the client went away while queued'))
  }
  res.once('close', onClose)
  return { signal: controller.signal, release: () => res.off('close', onClose) }
}

/**
 * Resolves when the response closes. Watched from the request's start (with a skip option), so
 * a client that leaves while the store call is out still gets its charge settled.
 */
export function closing(res: ResponseLike): Promise<void> {
  return new Promise((resolve) => res.once('close', () => resolve()))
}
