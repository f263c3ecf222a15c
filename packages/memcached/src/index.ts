/**
 * The public entry of @sluice/memcached.
 */
export { MemcachedStore } from './memcached-store'
export type {
  MemcachedStoreOptions,
  MemcachedClientStoreOptions,
  MemcachedServersStoreOptions,
} from './memcached-store'
export type { MemjsClient } from './wire'
