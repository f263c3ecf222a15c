import { ConfigError } from '@sluice/core'
import { combineKeys, headerKey, ipKey, normalizeIp, UNKNOWN_IP_KEY, userKey } from '@sluice/http'
import { boundKey } from '@sluice/http'

const req = (ip: string | undefined, headers: Record<string, string> = {}) => ({ ip, headers })

describe('ipKey', () => {
  test('IPv4 as is', () => {
    expect(ipKey()(req('203.0.113.7'))).toBe('203.0.113.7')
  })

  test.each([
    '::ffff:203.0.113.7',
    '::ffff:cb00:7107',
    '0:0:0:0:0:ffff:cb00:7107',
    '::FFFF:203.0.113.7',
  ])('IPv4-mapped %s is the IPv4 address', (mapped) => {
    expect(ipKey()(req(mapped))).toBe('203.0.113.7')
  })

  // The unparsed fast path must give what a full parse gives, including where it steps aside.
  test.each([
    ['10.0.0.1', '10.0.0.1'],
    ['255.255.255.255', '255.255.255.255'],
    ['0.0.0.0', '0.0.0.0'],
    ['::ffff:10.0.0.1', '10.0.0.1'],
    ['010.0.0.1', '8.0.0.1'], // leading zero: ipaddr.js reads octal, and so do we
    ['256.1.1.1', '256.1.1.1'], // not an address: kept as given
    ['1.2.3', '1.2.0.3'], // classful three-part form, as ipaddr.js parses it
    ['1.2.3.4.5', '1.2.3.4.5'],
    ['1..3.4', '1..3.4'],
    ['::ffff:999.1.1.1', '::ffff:999.1.1.1'],
    // Forwarded with a port: the port goes, or every connection would be a bucket of its own.
    ['203.0.113.1:1111', '203.0.113.1'],
    ['[2001:db8::1]:2222', '2001:db8::/64'],
    ['[::ffff:10.0.0.1]:80', '10.0.0.1'],
    ['host.example:80', 'host.example:80'], // not an address with a port: kept as given
  ])('normalizeIp(%s) is %s', (ip, expected) => {
    expect(normalizeIp(ip)).toBe(expected)
  })

  test('IPv6 grouped to /64 by default; configurable; false keeps the address', () => {
    expect(ipKey()(req('2001:db8:1:2:aaaa:bbbb:cccc:dddd'))).toBe('2001:db8:1:2::/64')
    expect(ipKey()(req('2001:DB8:1:2::1'))).toBe('2001:db8:1:2::/64')
    expect(ipKey({ ipv6Subnet: 48 })(req('2001:db8:1:2::1'))).toBe('2001:db8:1::/48')
    expect(ipKey({ ipv6Subnet: 56 })(req('2001:db8:1:2ff::1'))).toBe('2001:db8:1:200::/56')
    expect(ipKey({ ipv6Subnet: false })(req('2001:db8:0:0::1'))).toBe('2001:db8::1')
    expect(normalizeIp('2001:db8::1', 128)).toBe('2001:db8::1')
  })

  test('one key function, addresses in any order: each its own key (the last one is remembered)', () => {
    const warnings: string[] = []
    const key = ipKey({ logger: { warn: (m) => void warnings.push(m) } })
    const addresses = [
      '203.0.113.7',
      '203.0.113.7',
      '::ffff:203.0.113.7',
      '2001:db8:1:2::1',
      '2001:db8:1:2::1',
      '2001:db8:1:3::1',
      '',
      '',
      '203.0.113.8',
      '203.0.113.7',
    ]
    expect(addresses.map((ip) => key(req(ip)))).toEqual([
      '203.0.113.7',
      '203.0.113.7',
      '203.0.113.7',
      '2001:db8:1:2::/64',
      '2001:db8:1:2::/64',
      '2001:db8:1:3::/64',
      UNKNOWN_IP_KEY,
      UNKNOWN_IP_KEY,
      '203.0.113.8',
      '203.0.113.7',
    ])
    expect(warnings).toHaveLength(1)
  })

  test('ipv6Subnet outside 32-128 is a ConfigError naming it', () => {
    expect(() => ipKey({ ipv6Subnet: 16 })).toThrow(ConfigError)
    expect(() => ipKey({ ipv6Subnet: 16 })).toThrow(
      /`ipv6Subnet` must be an integer from 32 to 128, or false; got 16/,
    )
    expect(() => ipKey({ ipv6Subnet: 64.5 })).toThrow(/`ipv6Subnet`/)
  })

  test('a missing IP uses the documented fallback key and warns once', () => {
    const warnings: string[] = []
    const key = ipKey({ logger: { warn: (m) => void warnings.push(m) } })
    expect(key(req(undefined))).toBe(UNKNOWN_IP_KEY)
    expect(key(req(''))).toBe(UNKNOWN_IP_KEY)
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toContain(UNKNOWN_IP_KEY)
  })

  test('text that is not an address keys as is', () => {
    expect(ipKey()(req('unix:/tmp/socket'))).toBe('unix:/tmp/socket')
  })
})

describe('headerKey, userKey, combineKeys', () => {
  test('headerKey reads the header case-insensitively; absent is undefined', () => {
    const key = headerKey('X-API-Key')
    expect(key(req('1.2.3.4', { 'x-api-key': 'abc' }))).toBe('x-api-key:abc')
    expect(key(req('1.2.3.4'))).toBeUndefined()
  })

  test('userKey prefixes the id; anonymous is undefined', async () => {
    const key = userKey((r: { user?: { id: number } }) => r.user?.id)
    expect(await key({ user: { id: 42 } })).toBe('user:42')
    expect(await key({})).toBeUndefined()
  })

  test('combineKeys joins the parts; a missing part is -, false from any part bypasses', async () => {
    const both = combineKeys(ipKey(), headerKey('x-api-key'))
    expect(await both(req('1.2.3.4', { 'x-api-key': 't' }))).toBe('1.2.3.4|x-api-key:t')
    expect(await both(req('1.2.3.4'))).toBe('1.2.3.4|-')
    expect(await combineKeys(ipKey(), () => false)(req('1.2.3.4'))).toBe(false)
    expect(() => combineKeys()).toThrow(ConfigError)
  })
})

describe('boundKey', () => {
  test('keys up to 256 bytes are kept; longer ones hashed to a fixed size', () => {
    const edge = 'k'.repeat(256)
    expect(boundKey(edge)).toBe(edge)
    const long = boundKey('k'.repeat(10_000))
    expect(long).toMatch(/^sha256:[A-Za-z0-9_-]{43}$/)
    expect(boundKey('k'.repeat(10_000))).toBe(long)
    expect(boundKey('k'.repeat(10_001))).not.toBe(long)
    // 100 three-byte characters are 300 bytes: hashed, though only 100 UTF-16 units.
    expect(boundKey('€'.repeat(100))).toMatch(/^sha256:/)
  })
})
