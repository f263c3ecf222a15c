/**
 * Owns request keys: the client IP (IPv6 by subnet), header, user and combined keys. Bounding a
 * key's length is the kernel's (boundKey, re-exported).
 */
import ipaddr from 'ipaddr.js'
import { declareOptions, invalidOption } from '@sluice/core/web'

// Bounding a key is the kernel's (stores bound theirs the same way); re-exported for adapters.
export { boundKey, MAX_KEY_BYTES } from '@sluice/core/web'

/** A Fetch API `Headers` object, as far as keys read it. */
export interface HeadersLike {
  get(name: string): string | null
}

/**
 * Node's header record (`NodeHeaders` fits), declared here so that the web entry's types
 * need no @types/node.
 */
export interface NodeHeaders {
  readonly [name: string]: string | string[] | undefined
}

/**
 * What the pipeline and the key helpers read of any request: Node frameworks' requests, a Fetch
 * API `Request`, and Hono's `Context` (which has neither `ip` nor `headers`: its adapter gives
 * the address, and header keys find nothing on it) all fit.
 */
export interface RequestLike {
  readonly ip?: string | undefined
  /** Node's header record, or a Fetch `Headers` object. */
  readonly headers?: NodeHeaders | HeadersLike
  readonly url?: string
}

/** What every Node framework's request exposes: Express `req`, Fastify `request` and Koa `ctx` all fit. */
export interface HttpRequestLike extends RequestLike {
  /** The client address as the framework resolved it (its trust-proxy setting decides whether X-Forwarded-For counts). */
  readonly ip?: string | undefined
  readonly headers: NodeHeaders
  /** The request target (path and query), as Express `req.url`, Fastify `request.url` and Koa `ctx.url` give it. */
  readonly url?: string
}

/**
 * Derives the rate-limit key of a request. `undefined` means "no key from this source": the
 * adapters then use the client IP. `false` means "do not limit this request" (Koa's `id`).
 */
export type KeyFunction<Req = HttpRequestLike> = (
  req: Req,
) => string | false | undefined | Promise<string | false | undefined>

/** Where one-time warnings go. `console` fits. */
export interface Logger {
  warn(message: string): void
}

/** The key used when a request carries no client IP (e.g. a Unix socket): all such requests share it. */
export const UNKNOWN_IP_KEY = 'ip:unknown'

export interface IpKeyOptions {
  /**
   * Prefix length IPv6 addresses are grouped by, so one host cannot rotate through the
   * addresses of its subnet. 32-128, or `false` to key by the full address.
   * @default 64
   */
  ipv6Subnet?: number | false
  /**
   * Receives the one-time warning when a request has no IP and falls back to `UNKNOWN_IP_KEY`.
   * @default console
   */
  logger?: Logger
}

/** Checks `ipv6Subnet` once, at start-up. */
export function checkIpv6Subnet(value: unknown, option = 'ipv6Subnet'): number | false {
  if (value === false) return false
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 32 || value > 128) {
    invalidOption(option, value, 'an integer from 32 to 128, or false')
  }
  return value
}

/**
 * The canonical form of an address: IPv4 as is, IPv4-mapped IPv6 (any notation) as the IPv4
 * address, other IPv6 masked to `subnet` bits and written `network/subnet`. Text that is not an
 * address is returned unchanged (it still keys the request; it just is not grouped).
 */
export function normalizeIp(ip: string, subnet: number | false = 64): string {
  // Fast paths, checked without parsing (a full parse costs ~0.4 us, a third of a request's
  // limiter time): a canonical dotted IPv4 is its own key, and so is one that a dual-stack
  // server reports as ::ffff:a.b.c.d. Everything else goes through ipaddr.js.
  if (isCanonicalIPv4(ip, 0)) return ip
  if (ip.length > 7 && ip.startsWith('::ffff:') && isCanonicalIPv4(ip, 7)) return ip.slice(7)
  if (!ipaddr.isValid(ip)) {
    const bare = withoutPort(ip)
    return bare !== ip && ipaddr.isValid(bare) ? normalizeIp(bare, subnet) : ip
  }
  const address = ipaddr.parse(ip)
  if (address.kind() === 'ipv4') return address.toString()
  const v6 = address as ipaddr.IPv6
  // Decided by the address bits, not the spelling: ::ffff:1.2.3.4, ::ffff:102:304 and the long forms agree.
  if (v6.isIPv4MappedAddress()) return v6.toIPv4Address().toString()
  if (subnet === false || subnet === 128) return new ipaddr.IPv6(v6.parts).toRFC5952String()
  const parts = v6.parts.slice()
  for (let i = 0; i < 8; i++) {
    const keep = Math.min(16, Math.max(0, subnet - i * 16))
    parts[i] = keep === 0 ? 0 : parts[i] & ((0xffff << (16 - keep)) & 0xffff)
  }
  return `${new ipaddr.IPv6(parts).toRFC5952String()}/${subnet}`
}

/**
 * A forwarded address with its port (`203.0.113.1:1111`, `[2001:db8::1]:2222`, as some proxies
 * write X-Forwarded-For) without the port: the port changes with every connection, and would
 * give each connection a bucket of its own.
 */
function withoutPort(text: string): string {
  if (text.startsWith('[')) {
    const end = text.indexOf(']')
    return end > 0 ? text.slice(1, end) : text
  }
  const colon = text.indexOf(':')
  return colon > 0 && colon === text.lastIndexOf(':') ? text.slice(0, colon) : text
}

/** True when `ip` from `start` is four decimal octets 0-255 with no leading zeros, e.g. 10.0.0.1. */
function isCanonicalIPv4(ip: string, start: number): boolean {
  let dots = 0
  let octet = 0
  let digits = 0
  for (let i = start; i < ip.length; i++) {
    const code = ip.charCodeAt(i)
    if (code === 46) {
      if (digits === 0 || ++dots > 3) return false
      octet = 0
      digits = 0
    } else if (code >= 48 && code <= 57) {
      if (digits > 0 && octet === 0) return false // leading zero: not canonical
      octet = octet * 10 + (code - 48)
      if (++digits > 3 || octet > 255) return false
    } else {
      return false
    }
  }
  return dots === 3 && digits > 0
}

/** ipKey's options, declared once; null takes the default, as `value ?? default` did. */
export const IP_KEY_OPTIONS = declareOptions<IpKeyOptions>('ipKey', {
  ipv6Subnet: {
    doc: 'prefix length IPv6 addresses are grouped by, or false',
    default: 64,
    check: (value) => checkIpv6Subnet(value),
    orNull: true,
  },
  logger: {
    doc: 'receives the one-time warning of a request without an IP',
    default: console,
    orNull: true,
  },
})

/** The default key: the client IP, IPv6 grouped by subnet, a documented fallback without one. */
export function ipKey(options: IpKeyOptions = {}): (req: RequestLike) => string {
  const keyOf = ipKeyOf(options)
  return function keyByIp(req) {
    return keyOf(req.ip)
  }
}

/** `ipKey` on an address already found (adapters whose request has no `ip`, such as Fetch's). */
export function ipKeyOf(options: IpKeyOptions = {}): (ip: string | undefined) => string {
  const given = IP_KEY_OPTIONS.resolve(options)
  const subnet = given.ipv6Subnet as number | false
  const logger = given.logger as Logger
  let warned = false
  // The last address and its key: a connection's requests come from one address (Node hands
  // each socket's address back as the same string), and normalizing costs a scan per request.
  let lastIp = ''
  let lastKey = ''
  return function keyOfIp(ip) {
    if (ip === lastIp && ip !== '') return lastKey
    if (ip === undefined || ip === '') {
      if (!warned) {
        warned = true
        logger.warn(
          `[sluice] a request has no client IP (Unix socket or a proxy that hides it); such requests share the key '${UNKNOWN_IP_KEY}'. Set the \`key\` option to limit them separately.`,
        )
      }
      return UNKNOWN_IP_KEY
    }
    lastKey = normalizeIp(ip, subnet)
    lastIp = ip
    return lastKey
  }
}

/** Keys by a request header (e.g. an API token); `undefined` (fall back to the IP) when it is absent. */
export function headerKey(name: string): (req: RequestLike) => string | undefined {
  if (typeof name !== 'string' || name === '')
    invalidOption('headerKey(name)', name, 'a header name')
  const field = name.toLowerCase()
  const prefix = `${field}:`
  return function keyByHeader(req) {
    const text = firstValue(readHeader(req.headers, field))
    return text === undefined || text === '' ? undefined : prefix + text
  }
}

function isHeaders(headers: NodeHeaders | HeadersLike): headers is HeadersLike {
  return typeof (headers as HeadersLike).get === 'function'
}

/** A header's value from Node's record (its first, when repeated) or a Fetch `Headers` object. */
export function readHeader(
  headers: NodeHeaders | HeadersLike | undefined,
  name: string,
): string | undefined {
  if (headers === undefined) return undefined
  if (isHeaders(headers)) return headers.get(name) ?? undefined
  const value = headers[name]
  return Array.isArray(value) ? value[0] : value
}

/**
 * A header sent more than once reaches the app joined with ", " (Node's rule for most fields),
 * so `x-api-key: A` twice plus `x-api-key: junk` would read `A, A, junk`: a new bucket for every
 * variant. The key is the first value, whatever follows.
 */
function firstValue(text: string | undefined): string | undefined {
  if (text === undefined) return undefined
  const comma = text.indexOf(',')
  return comma < 0 ? text : text.slice(0, comma).trim()
}

/** Keys by user id (e.g. `userKey(req => req.user?.id)`); `undefined` (fall back to the IP) for anonymous requests. */
export function userKey<Req>(
  fn: (
    req: Req,
  ) => string | number | null | undefined | Promise<string | number | null | undefined>,
): (req: Req) => Promise<string | undefined> {
  if (typeof fn !== 'function') invalidOption('userKey(fn)', fn, 'a function of the request')
  return async function keyByUser(req) {
    const id = await fn(req)
    return id === undefined || id === null || id === '' ? undefined : `user:${id}`
  }
}

/**
 * A hybrid key from several (e.g. `combineKeys(ipKey(), headerKey('x-api-key'))`): the parts joined
 * with `|`; a part without a value is written `-`. `false` from any part bypasses the limit.
 */
export function combineKeys<Req>(
  ...keys: ReadonlyArray<
    (req: Req) => string | false | undefined | Promise<string | false | undefined>
  >
): (req: Req) => Promise<string | false> {
  if (keys.length === 0 || keys.some((k) => typeof k !== 'function')) {
    invalidOption('combineKeys(...keys)', keys, 'one or more key functions')
  }
  return async function keyByParts(req) {
    const parts = await Promise.all(keys.map((key) => key(req)))
    if (parts.includes(false)) return false
    return parts.map((part) => part ?? '-').join('|')
  }
}
