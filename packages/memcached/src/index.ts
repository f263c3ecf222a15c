/**
 * The public entry of @sluice/memcached.
 */
import { nameStore } from '@sluice/core/adapter'
import { MemcachedStore } from './memcached-store'

// Log lines and errors name the store, even where a bundler renamed the class.
nameStore(MemcachedStore, 'MemcachedStore')

export { MemcachedStore }
export type {
  MemcachedStoreOptions,
  MemcachedClientStoreOptions,
  MemcachedServersStoreOptions,
} from './memcached-store'
export type { MemjsClient } from './wire'
