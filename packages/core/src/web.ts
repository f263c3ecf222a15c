/**
 * @sluice/core/web: what runs where only web APIs exist (Cloudflare Workers, Deno, Bun, edge
 * functions), and what the Fetch adapters build on: limiters, the memory store, keys, errors and
 * the HTTP pipeline. Nothing here imports a Node built-in (a test bundles it with esbuild for a
 * neutral platform). Rules are taken compiled (a RuleSet or a RulesWatcher), since reading and
 * checking rules files needs Node; metrics and the rules loaders are in the main entry.
 */
export { createLimiter } from './create-limiter'
export { MemoryStore } from './store/memory-store'
export { ALGORITHMS } from './policy'
export { parseDuration, formatDuration } from './duration'
export { monotonicClock, monotonicTurnClock, systemClock, turnClock } from './clock'
export { SluiceError, ConfigError, StoreError, invalidOption } from './errors'
export { storeHealth } from './store-call/health'
export {
  ipKey,
  ipKeyOf,
  headerKey,
  readHeader,
  userKey,
  combineKeys,
  normalizeIp,
  UNKNOWN_IP_KEY,
} from './http/keys'
export { HTTP_OPTION_NAMES } from './http/pipeline'
export { createHttpLimiter } from './http/web'
export { createRefusalJson, JSON_CONTENT_TYPE } from './http/refusal-json'
export { isPromise } from './promise'
export { compileTrustProxy, forwardedEntries } from './http/trust'
export { resetProxyWarnings } from './http/proxy-warnings'
export type * from './public-types'
// What stores that run where only web APIs exist build on (@sluice/cloudflare, and @sluice/redis,
// which imports only this entry so that it loads on Vercel's edge runtime with @upstash/redis).
export { algorithms, algorithmOf } from './algorithms'
export {
  REGISTRY,
  ROWS,
  namesIn,
  listNames,
  type AlgorithmRow,
  type AlgorithmFamily,
  type StateShape,
  type ReplyShape,
} from './algorithms/registry'
export type { LuaFragments, LuaFrame } from './algorithms/lua'
export { BlockCache } from './store/block-cache'
export { ALGORITHM_CODES, policyCode, checkKnownOptions } from './options'
export { isWide } from './policy'
export { SerialQueues } from './store-call/serial'
export { nameStore } from './store-call/store-name'
