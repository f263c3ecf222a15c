/**
 * @sluice/core/web: the kernel where only web APIs exist (Cloudflare Workers, Deno, Bun, edge
 * functions): limiters, the memory store, errors, and what the packages built on it use
 * (@sluice/http and the stores). Nothing here imports a Node built-in (a test bundles it with
 * esbuild for a neutral platform); metrics are in the main entry.
 */
export { createLimiter } from './create-limiter'
export { MemoryStore } from './store/memory-store'
export { ALGORITHMS } from './policy'
export { parseDuration, formatDuration } from './duration'
export { monotonicClock, monotonicTurnClock, systemClock, turnClock } from './clock'
export { SluiceError, ConfigError, StoreError } from './errors'
export { storeHealth } from './store-call/health'
export type * from './public-types'
// What stores that run where only web APIs exist build on (@sluice/cloudflare, and @sluice/redis,
// which imports only this entry so that it loads on Vercel's edge runtime with @upstash/redis).
export * from './internals'
export { BlockCache } from './store/block-cache'
export { SerialQueues } from './store-call/serial'
export { nameStore } from './store-call/store-name'
