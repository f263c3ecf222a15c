/**
 * Owns the default storage: @nestjs/throttler's `increment` interface over a Sluice store, so a
 * guard that calls `this.storageService.increment(...)` (its WebSocket recipe) counts in the same
 * store as the HTTP guard.
 */
import { Inject, Injectable, Optional } from '@nestjs/common'
import { createLimiter, MemoryStore, type Clock, type Limiter, type Store } from '@sluice/core'
import { BlockLedger, recordOf } from './blocks'
import { throttlerPrefix } from './constants'
import { defaultAlgorithm } from './default-algorithm'
import type { ThrottlerStorage, ThrottlerStorageRecord } from './storage'

/** Where the default storage counts. */
export interface ThrottlerStorageServiceOptions {
  /** @default new MemoryStore() */
  store?: Store
  /** @default Date.now */
  clock?: Clock
}

/** The token `ThrottlerModule` provides the storage's options under. */
export const THROTTLER_STORAGE_OPTIONS = 'SLUICE:THROTTLER_STORAGE_OPTIONS'

/** @nestjs/throttler's storage on a Sluice store, counting as the guard does (defaultAlgorithm). */
@Injectable()
export class ThrottlerStorageService implements ThrottlerStorage {
  /** The Sluice store the counts live in (the guard counts there too). */
  readonly store: Store
  readonly clock: Clock | undefined
  /** Per throttler name, limit and ttl: its limiter and the blocks it placed. */
  private readonly counters = new Map<string, { limiter: Limiter; ledger: BlockLedger }>()

  constructor(
    @Optional() @Inject(THROTTLER_STORAGE_OPTIONS) options: ThrottlerStorageServiceOptions = {},
  ) {
    this.store = options?.store ?? new MemoryStore()
    this.clock = options?.clock
  }

  async increment(
    key: string,
    ttl: number,
    limit: number,
    blockDuration: number,
    throttlerName: string,
  ): Promise<ThrottlerStorageRecord> {
    const { limiter, ledger } = this.counterFor(limit, ttl, throttlerName)
    const decision = await limiter.consume(key)
    return recordOf(limiter, ledger, key, decision, blockDuration)
  }

  /** A throttler's counts keep apart from another's, as the guard's do (throttlerPrefix). */
  private counterFor(
    limit: number,
    ttl: number,
    throttlerName: string,
  ): { limiter: Limiter; ledger: BlockLedger } {
    const id = `${throttlerName}\n${limit}:${ttl}`
    let counter = this.counters.get(id)
    if (counter === undefined) {
      const limiter = createLimiter({
        limit,
        window: ttl,
        algorithm: defaultAlgorithm(limit),
        store: this.store,
        clock: this.clock,
        prefix: throttlerPrefix(throttlerName),
      })
      counter = { limiter, ledger: new BlockLedger() }
      this.counters.set(id, counter)
    }
    return counter
  }
}
