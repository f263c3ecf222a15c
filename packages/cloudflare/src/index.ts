/**
 * The public entry of @sluice/cloudflare: exact shared limits for Cloudflare Workers, kept in
 * Durable Objects. Nothing here imports a Node built-in.
 */
export { DurableObjectStore } from './durable-object-store'
export { SluiceLimiterObject } from './limiter-object'
export type { DurableObjectStateLike, DurableObjectStorageLike } from './limiter-object'
export type {
  DurableObjectIdLike,
  DurableObjectNamespaceLike,
  DurableObjectStoreOptions,
  DurableObjectStubLike,
} from './options'
