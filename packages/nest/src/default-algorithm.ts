import type { AlgorithmName } from '@sluice/core'

/**
 * The largest limit counted exactly by default. A sliding-log key holds one timestamp per unit
 * of its limit, so above this the default is sliding-window's two counters per key.
 */
export const LOG_LIMIT = 100

/**
 * The default algorithm of a limit: sliding-log (each request counted for exactly `ttl` ms, as
 * @nestjs/throttler's storage counts) up to LOG_LIMIT, sliding-window above.
 */
export function defaultAlgorithm(limit: number): AlgorithmName {
  return limit <= LOG_LIMIT ? 'sliding-log' : 'sliding-window'
}
