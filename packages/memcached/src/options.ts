/**
 * Owns MemcachedStore's options: their documentation and defaults, checked and resolved once
 * into the settings the store reads.
 */
import { ConfigError } from '@sluice/core'
import { checkPositiveInteger, declareOptions, invalidOption } from '@sluice/core/adapter'
import { Client, type ClientOptions, type ServerOptions } from 'memjs'
import { Wire, type MemjsClient } from './wire'

export interface CommonOptions {
  /**
   * Namespace of every item the store writes: `<prefix>:<policy id>|<key>[:<bucket>]`.
   * @default 'sluice'
   */
  prefix?: string
  /**
   * Compare-and-swap attempts for `token-bucket`, `gcra` and `leaky-bucket` before the call
   * fails with a StoreError (so the limiter's `onStoreError` decides): each retry means another
   * process changed the same key between our read and our write.
   * @default 10
   */
  casAttempts?: number
}

export interface MemcachedClientStoreOptions extends CommonOptions {
  /**
   * A memjs client you own (`memjs.Client.create('host:11211')`). The store never closes it.
   * Its `timeout` (s) bounds each request; `failover` is honoured; `retries` is not used (see
   * docs/memcached.md).
   * @default undefined (then `servers` is required)
   */
  client: MemjsClient
  servers?: never
  clientOptions?: never
}

export interface MemcachedServersStoreOptions extends CommonOptions {
  /**
   * `'host:port,host:port'`: the store creates a memjs client on these and `close()` quits it.
   * @default undefined (then `client` is required)
   */
  servers: string
  client?: never
  /**
   * memjs options for the client the store creates.
   * @default { timeout: 0.5, conntimeout: 1, keepAlive: true, retries: 0 }
   */
  clientOptions?: ClientOptions & ServerOptions
}

export type MemcachedStoreOptions = MemcachedClientStoreOptions | MemcachedServersStoreOptions

/** Options of the client the store creates from `servers` (memjs's own `timeout` is 0.5 s too). */
const CLIENT_DEFAULTS: ClientOptions & ServerOptions = {
  timeout: 0.5,
  // memjs waits 2 x timeout to connect by default; a dead host should fail as fast as a request.
  conntimeout: 1,
  keepAlive: true,
  // memjs logs every failed request it retries itself; the store never asks it to retry.
  retries: 0,
}

/** MemcachedStoreOptions resolved: what the store reads. */
export interface MemcachedSettings {
  readonly wire: Wire
  /** The client the store created from `servers` (closed by `close()`); undefined when given one. */
  readonly owned: Client | undefined
  readonly prefix: string
  readonly casAttempts: number
}

function checkClient(client: unknown, name: string): void {
  const server = typeof client === 'object' && client !== null ? (client as MemjsClient).server : 0
  if (typeof server !== 'function') invalidOption(name, client, 'a memjs Client')
}

function checkServers(servers: unknown, name: string): void {
  if (typeof servers !== 'string' || servers.trim() === '') {
    invalidOption(name, servers, 'a non-empty "host:port,host:port" string')
  }
}

/**
 * MemcachedStore's options, declared once (in the order they are checked; that exactly one of
 * `client` and `servers` is given is checked right after). null takes the default, as it
 * always has.
 */
export const MEMCACHED_OPTIONS = declareOptions<MemcachedStoreOptions>('MemcachedStore', {
  client: { doc: 'a memjs client you own (or give servers)', check: checkClient },
  servers: {
    doc: "'host:port,host:port': the store creates a memjs client and close() quits it",
    check: checkServers,
  },
  clientOptions: {
    doc: 'memjs options for the client the store creates from servers',
    default: CLIENT_DEFAULTS,
    orNull: true,
    check: (value, name) => {
      if (typeof value !== 'object' || value === null) invalidOption(name, value, 'an object')
    },
  },
  prefix: {
    doc: 'namespace of every item the store writes',
    default: 'sluice',
    orNull: true,
    check: (prefix, name) => {
      if (typeof prefix !== 'string') invalidOption(name, prefix, 'a string')
    },
  },
  casAttempts: {
    doc: 'compare-and-swap attempts for the meters before the call fails with a StoreError',
    default: 10,
    orNull: true,
    check: checkPositiveInteger,
  },
})

/** Checks every option (a ConfigError names the first bad one) and applies the defaults. */
export function resolveMemcachedOptions(options: MemcachedStoreOptions): MemcachedSettings {
  if (options === null || typeof options !== 'object') {
    invalidOption('options', options, 'an object with `client` or `servers`')
  }
  const given = MEMCACHED_OPTIONS.resolve(options)
  const { client, servers } = given
  if ((client === undefined) === (servers === undefined)) {
    throw new ConfigError(
      'MemcachedStore needs exactly one of `client` (a memjs client) or `servers` ("host:port,...")',
    )
  }
  // memjs's defaults for what the given clientOptions leave unset are the store's, not memjs's.
  const owned =
    servers === undefined
      ? undefined
      : Client.create(servers, { ...CLIENT_DEFAULTS, ...given.clientOptions })
  const wire = new Wire(owned ?? client!)
  return { wire, owned, prefix: given.prefix!, casAttempts: given.casAttempts! }
}
