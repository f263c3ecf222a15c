/**
 * Owns @fastify/rate-limit's form of a client address, its default key: IPv4 as is, IPv4-mapped
 * IPv6 as IPv4, other IPv6 as the first address of its /ipv6Subnet network (no `/n` suffix),
 * anything else lower-cased. Core's normalizeIp does the address work.
 */
import { normalizeIp } from '@sluice/http'
import { isIPv6 } from 'node:net'
import { DEFAULT_IPV6_SUBNET } from './params'

export function normalizeIP(ip: string, ipv6Subnet: number = DEFAULT_IPV6_SUBNET): string {
  if (!isIPv6(ip)) return ip.toLowerCase()
  const normal = normalizeIp(ip, ipv6Subnet >= 128 ? false : ipv6Subnet)
  const slash = normal.indexOf('/')
  return slash === -1 ? normal : normal.slice(0, slash)
}
