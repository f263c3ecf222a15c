/**
 * Owns giving an admitted request's concurrency slot back when its response ends: finished,
 * failed or abandoned by the client, the response closes once, and so the slot goes back once.
 */
import type { SlotLease } from '@sluice/core/web'
import type { ResponseLike } from './types'

/** Releases `slot` when `res` closes (at once if it already has). */
export function releaseOnClose(res: ResponseLike, slot: SlotLease): void {
  const release = (): void => void slot.release()
  if (res.destroyed || res.writableFinished) release()
  else res.once('close', release)
}
