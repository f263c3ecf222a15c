/**
 * Owns `trustProxy` for adapters that find the address themselves (Fetch, Hono): which senders
 * are proxies of yours, and so which X-Forwarded-For entry is the client. The same rules as
 * Express's `trust proxy`: a hop count, or the proxies' addresses and CIDR ranges.
 */
import ipaddr from 'ipaddr.js'
import { invalidOption } from '@sluice/core/web'

/** What a framework's proxy setting trusts: nothing, some hops, or every X-Forwarded-For (spoofable). */
export type ProxyTrust = 'none' | 'some' | 'all'

/**
 * Which senders are trusted proxies: `false` none (the sender is the client); a number, that
 * many hops (the sender and the n-1 proxies before it); addresses or CIDR ranges of your proxies
 * (`'loopback'`, `'linklocal'`, `'uniquelocal'` name their ranges); `true` every sender
 * (the first X-Forwarded-For entry: any client can choose it, so it is warned about).
 */
export type TrustProxy = boolean | number | string | readonly string[]

/** A compiled `trustProxy`: how it reads in warnings, and the client of a request. */
export interface CompiledTrust {
  readonly trust: ProxyTrust
  /** The client address, from the sender's address and the X-Forwarded-For field (if any). */
  clientAddress(peer: string, forwardedFor: string | undefined): string
}

/** Express's (proxy-addr's) named ranges. */
const NAMED_RANGES: Record<string, readonly string[]> = {
  loopback: ['127.0.0.1/8', '::1/128'],
  linklocal: ['169.254.0.0/16', 'fe80::/10'],
  uniquelocal: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
}

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number]

function rangesOf(entries: readonly unknown[], option: string): Range[] {
  const ranges: Range[] = []
  for (const entry of entries) {
    if (typeof entry !== 'string') invalidOption(`${option}[]`, entry, 'a string')
    for (const part of NAMED_RANGES[entry] ?? [entry]) {
      if (ipaddr.isValidCIDR(part)) ranges.push(ipaddr.parseCIDR(part))
      else if (ipaddr.isValid(part)) {
        const address = ipaddr.process(part)
        ranges.push([address, address.kind() === 'ipv4' ? 32 : 128])
      } else {
        invalidOption(
          `${option}[]`,
          entry,
          "an IP address, a CIDR range, or 'loopback', 'linklocal' or 'uniquelocal'",
        )
      }
    }
  }
  return ranges
}

function inRanges(ranges: readonly Range[], ip: string): boolean {
  if (!ipaddr.isValid(ip)) return false
  const address = ipaddr.process(ip)
  return ranges.some((range) => address.kind() === range[0].kind() && address.match(range))
}

/** X-Forwarded-For's entries, nearest hop last; empty entries (a bare `X-Forwarded-For:`) dropped. */
export function forwardedEntries(field: string | undefined): string[] {
  if (field === undefined) return []
  return field
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
}

/**
 * Walks from the sender towards the client while the address in hand is trusted (hop `i` is
 * the sender at 0, then X-Forwarded-For from its end): the first untrusted one is the client,
 * or the furthest entry when every hop is trusted.
 */
function walk(trusted: (address: string, hop: number) => boolean): CompiledTrust['clientAddress'] {
  return function clientAddress(peer, forwardedFor) {
    const entries = forwardedEntries(forwardedFor)
    let address = peer
    for (let hop = 0; hop < entries.length && trusted(address, hop); hop++) {
      address = entries[entries.length - 1 - hop]
    }
    return address
  }
}

/** Checks and compiles `trustProxy` once, at creation. */
export function compileTrustProxy(value: unknown, option = 'trustProxy'): CompiledTrust {
  if (value === undefined || value === false || value === 0) {
    return { trust: 'none', clientAddress: (peer) => peer }
  }
  if (value === true) return { trust: 'all', clientAddress: walk(() => true) }
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value) || value < 0) {
      invalidOption(option, value, 'a whole number of proxy hops (0 or more), addresses or true')
    }
    return { trust: 'some', clientAddress: walk((_address, hop) => hop < value) }
  }
  const entries = typeof value === 'string' ? value.split(',').map((s) => s.trim()) : value
  if (!Array.isArray(entries)) {
    invalidOption(option, value, 'a boolean, a hop count, or addresses and CIDR ranges')
  }
  const ranges = rangesOf(entries as readonly unknown[], option)
  return { trust: 'some', clientAddress: walk((address) => inRanges(ranges, address)) }
}
