/**
 * Owns @nestjs/throttler's block on Sluice's counters: a key that goes over its limit is refused
 * for `blockDuration` and then starts afresh, and requests refused while blocked are not counted
 * and do not extend the block.
 */
import type { Decision, Limiter } from '@sluice/core'
import type { ThrottlerStorageRecord } from './storage'

/** Keys this process blocked, so a refusal under the block does not start a new one. */
export class BlockLedger {
  private readonly until = new Map<string, number>()

  holds(key: string, now: number): boolean {
    const until = this.until.get(key)
    if (until === undefined) return false
    if (until > now) return true
    this.until.delete(key)
    return false
  }

  record(key: string, until: number, now: number): void {
    // Expired entries go once the ledger grows, so keys never seen again do not pile up.
    if (this.until.size >= 10_000) {
      for (const [known, end] of this.until) if (end <= now) this.until.delete(known)
    }
    this.until.set(key, until)
  }
}

const secondsOf = (ms: number): number => Math.max(1, Math.ceil(ms / 1000))

/**
 * The record of one decision, placing the block when a request went over the limit: the key is
 * refused for `blockDuration` ms, in the store, where every process sees it, and with a single
 * limit (`forgive`) its count is forgotten, so it starts afresh when the block ends. With several
 * limits nothing is forgotten: tripping a per-second limit must not wipe a day's quota. A promise
 * only when a block is placed (an admitted request, or one refused under a block in force, is
 * answered without another turn of the event loop).
 */
export function recordOf(
  limiter: Limiter,
  ledger: BlockLedger,
  key: string,
  decision: Decision,
  blockDuration: number,
  forgive = true,
  blockFailed: (error: unknown) => void = rethrow,
): ThrottlerStorageRecord | Promise<ThrottlerStorageRecord> {
  const timeToExpire = Math.ceil(decision.resetMs / 1000)
  if (decision.allowed) {
    const totalHits = decision.limit - decision.remaining
    return { totalHits, timeToExpire, isBlocked: false, timeToBlockExpire: 0 }
  }
  // Refused by a block already in force, or answered without the store ('deny'): no new block.
  if (decision.degraded || ledger.holds(key, decision.at)) {
    const wait = Number.isFinite(decision.retryAfterMs) ? decision.retryAfterMs : blockDuration
    return blockedRecord(decision, timeToExpire, secondsOf(wait))
  }
  return placeBlock(limiter, ledger, key, decision, blockDuration, forgive).catch(
    (error: unknown) => {
      // The request was counted and refused; only its block failed: still a refusal, as the
      // count says, and the next refusal tries to place the block again.
      blockFailed(error)
      const wait = Number.isFinite(decision.retryAfterMs) ? decision.retryAfterMs : blockDuration
      return blockedRecord(decision, timeToExpire, secondsOf(wait))
    },
  )
}

function rethrow(error: unknown): never {
  throw error
}

function blockedRecord(
  decision: Decision,
  timeToExpire: number,
  timeToBlockExpire: number,
): ThrottlerStorageRecord {
  return { totalHits: decision.limit + 1, timeToExpire, isBlocked: true, timeToBlockExpire }
}

async function placeBlock(
  limiter: Limiter,
  ledger: BlockLedger,
  key: string,
  decision: Decision,
  blockDuration: number,
  forgive: boolean,
): Promise<ThrottlerStorageRecord> {
  if (forgive) await limiter.reset(key)
  await limiter.block(key, blockDuration)
  ledger.record(key, decision.at + blockDuration, decision.at)
  const timeToExpire = Math.ceil(decision.resetMs / 1000)
  return blockedRecord(decision, timeToExpire, secondsOf(blockDuration))
}
