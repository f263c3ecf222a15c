/**
 * @sluice/core/adapter: what a store author, and the packages built on the kernel (@sluice/http,
 * @sluice/rules, @sluice/cli), use besides the main entry: policies, the algorithms'
 * transitions, option checks and the limiter's building blocks. Its types are exported by the
 * main entry.
 */
export * from './internals'
export { SerialQueues } from './store-call/serial'
export { nameStore, storeName } from './store-call/store-name'
export { BlockCache } from './store/block-cache'
export { setMonotonicSource, type MonotonicSource } from './clock'
