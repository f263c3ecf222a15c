/**
 * allowList / denyList entries: IPs and ranges match the client's address, other entries the
 * key; a key a client chooses never matches an IP entry.
 */
import { compileList } from '../src/checks'

const req = (ip: string | undefined) => ({ ip })

test('an IP entry matches the address, never a key that spells it', () => {
  const inList = compileList(['10.1.2.3', '192.168.0.0/16', 'tenant:vip'], 'allowList')!
  // The monitoring host itself, by its address, whatever its key.
  expect(inList(req('10.1.2.3'), 'tenant:acme')).toBe(true)
  expect(inList(req('::ffff:10.1.2.3'), 'tenant:acme')).toBe(true)
  expect(inList(req('192.168.4.5'), 'anything')).toBe(true)
  // A client elsewhere that sends the host's address (or a range's) as its key: not listed.
  expect(inList(req('203.0.113.9'), '10.1.2.3')).toBe(false)
  expect(inList(req('203.0.113.9'), '192.168.4.5')).toBe(false)
  // Keys match keys, from any address, or none.
  expect(inList(req('203.0.113.9'), 'tenant:vip')).toBe(true)
  expect(inList(req(undefined), 'tenant:vip')).toBe(true)
  expect(inList(req(undefined), '10.1.2.3')).toBe(false)
})

test('a default key (the address) still matches an IP entry, through the address', () => {
  const inList = compileList(['10.1.2.3'], 'denyList')!
  expect(inList(req('10.1.2.3'), '10.1.2.3')).toBe(true)
  expect(inList(req('10.1.2.4'), '10.1.2.4')).toBe(false)
})
