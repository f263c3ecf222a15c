/**
 * Owns express-rate-limit's key of an address, `ipKeyGenerator(ip, ipv6Subnet)`, on core's
 * normalizeIp: IPv4 (also mapped into IPv6, in any notation) as the IPv4 address, IPv6 as its
 * `network/prefix`, grouped by /56 unless told otherwise.
 */
import { isIPv4, isIPv6 } from 'node:net'
import { normalizeIp } from '@sluice/http'

/** `::a.b.c.d`: an IPv4 address written into the IPv4-compatible range (the first 96 bits zero). */
function ipv4Compatible(ip: string): string | undefined {
  const tail = ip.slice(ip.lastIndexOf(':') + 1)
  if (!isIPv4(tail)) return undefined
  return normalizeIp(ip, 96) === '::/96' ? tail : undefined
}

/**
 * The key of a client address: an IPv4 address as is, an IPv6 address as the subnet of
 * `ipv6Subnet` bits it belongs to (`false`: the address unchanged), so one host cannot rotate
 * through its subnet's addresses. Use it in a custom keyGenerator that falls back to the IP.
 */
export function ipKeyGenerator(ip: string, ipv6Subnet: number | false = 56): string {
  if (!isIPv6(ip)) return ip
  const compatible = ipv4Compatible(ip)
  if (compatible !== undefined) return compatible
  // normalizeIp answers an IPv4-mapped address (::ffff:…) with its IPv4 address.
  const whole = normalizeIp(ip, false)
  if (isIPv4(whole)) return whole
  if (ipv6Subnet === false) return ip
  return ipv6Subnet === 128 ? `${whole}/128` : normalizeIp(ip, ipv6Subnet)
}
