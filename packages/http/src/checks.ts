/** Owns the checks of HTTP options that need more than a type test: peer names, lists, queue. */
import ipaddr from 'ipaddr.js'
import { ConfigError, describeValue, invalidOption, checkKnownOptions } from '@sluice/core/web'
import { normalizeIp, type RequestLike } from './keys'
import type { Awaitable, RequestList } from './types'

/** A peer library's option names a main entry refuses, each with Sluice's name for it. */
export interface PeerNames {
  /** The peer library, e.g. 'express-rate-limit'. */
  readonly peer: string
  /** The entry that keeps the peer's names and defaults, e.g. '@sluice/express/compat'. */
  readonly compatEntry: string
  /** Peer name → what to write instead. */
  readonly names: Readonly<Record<string, string>>
}

/**
 * Throws a ConfigError for the first peer option name given to a main entry: main entries take
 * Sluice's names only, so the error says what to write and which entry keeps the peer's names.
 */
export function refusePeerNames(options: unknown, peer: PeerNames): void {
  if (typeof options !== 'object' || options === null) return
  for (const [name, instead] of Object.entries(peer.names)) {
    const value = (options as Record<string, unknown>)[name]
    if (value === undefined) continue
    throw new ConfigError(
      `\`${name}\` is ${peer.peer}'s name (got ${describeValue(value)}): use ${instead}, or import from \`${peer.compatEntry}\` to keep ${peer.peer}'s names and defaults`,
    )
  }
}

export { checkBoolean, checkFunction } from '@sluice/core/web'

/**
 * The request's address for a list, or undefined without one. A reader may throw for a request
 * without an address (Fetch's, see onMissingAddress): the key was found already, so such a
 * request is simply not listed by address, and stays limited under its key.
 */
function addressOrNone<Req>(
  clientIp: (req: Req) => string | undefined,
  req: Req,
): string | undefined {
  try {
    return clientIp(req)
  } catch {
    return undefined
  }
}

/** Compiles an IP/CIDR/key list into a matcher, once. */
export function compileList<Req extends RequestLike>(
  list: RequestList<Req> | undefined,
  option: string,
  clientIp: (req: Req) => string | undefined = (req) => req.ip,
): ((req: Req, key: string) => Awaitable<boolean>) | undefined {
  if (list === undefined) return undefined
  if (typeof list === 'function') return list
  if (!Array.isArray(list))
    invalidOption(option, list, 'an array of IPs, CIDR ranges or keys, or a function')
  // Apart: an IP entry matches the client's address, never a key a client may choose itself
  // (`key: req => req.headers['x-tenant']` sending `x-tenant: 10.1.2.3`).
  const keys = new Set<string>()
  const addresses = new Set<string>()
  const ranges: Array<[ipaddr.IPv4 | ipaddr.IPv6, number]> = []
  for (const entry of list as readonly unknown[]) {
    if (typeof entry !== 'string') invalidOption(`${option}[]`, entry, 'a string')
    const slash = entry.indexOf('/')
    if (slash > 0 && ipaddr.isValid(entry.slice(0, slash)) && !ipaddr.isValidCIDR(entry)) {
      invalidOption(
        `${option}[]`,
        entry,
        'a CIDR range whose prefix length fits the address (IPv4 0-32, IPv6 0-128), an IP or a key',
      )
    }
    if (ipaddr.isValidCIDR(entry)) ranges.push(ipaddr.parseCIDR(entry))
    else if (ipaddr.isValid(entry)) addresses.add(normalizeIp(entry, false))
    else keys.add(entry)
  }
  return function inList(req, key) {
    if (keys.has(key)) return true
    if (addresses.size === 0 && ranges.length === 0) return false
    const ip = addressOrNone(clientIp, req)
    if (ip === undefined || ip === '' || !ipaddr.isValid(ip)) return false
    if (addresses.has(normalizeIp(ip, false))) return true
    if (ranges.length === 0) return false
    const address = ipaddr.process(ip)
    return ranges.some((range) => address.kind() === range[0].kind() && address.match(range))
  }
}

/** Options that set limits, which `rules` replaces. */
export const RULES_EXCLUDE = [
  'topRefused',
  'limit',
  'limits',
  'window',
  'algorithm',
  'burst',
  'precision',
  'anchor',
  'throttle',
] as const

/** Checks `queue` once; its maxWaitMs, or undefined when queueing is off. */
export function checkQueue(queue: unknown): number | undefined {
  if (queue === undefined) return undefined
  if (typeof queue !== 'object' || queue === null || Array.isArray(queue)) {
    invalidOption('queue', queue, 'an object { maxWaitMs }')
  }
  checkKnownOptions(queue, ['maxWaitMs'], 'queue')
  const ms = (queue as { maxWaitMs?: unknown }).maxWaitMs
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms <= 0) {
    invalidOption('queue.maxWaitMs', ms, 'a positive number of ms')
  }
  return ms
}
