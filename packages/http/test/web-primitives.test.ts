// The request path's web replacements for node:crypto, Buffer and node:http give what Node's
// gave, so the Node build behaves as before.
import { createHash } from 'node:crypto'
import { STATUS_CODES } from 'node:http'
import fc from 'fast-check'
import { boundKey, type HttpRequestLike, type ResponseLike, type RuleSet } from '@sluice/http'
import { createHttpLimiter as createWebOnlyHttpLimiter } from '../src/web-host'
import { base64url, sha256, utf8Length } from '../../core/src/sha256'
import { ERROR_STATUS_TEXT } from '../src/status-text'
import { createHttpLimiter, parseRules } from '@sluice/rules'

const nodeDigest = (text: string) => createHash('sha256').update(text).digest('base64url')

test('sha256 + base64url equal node:crypto, across block boundaries and any UTF-16', () => {
  for (const length of [0, 1, 54, 55, 56, 63, 64, 65, 119, 120, 300, 1000]) {
    const text = 'k'.repeat(length)
    expect(base64url(sha256(text))).toBe(nodeDigest(text))
  }
  fc.assert(
    fc.property(fc.string({ unit: 'binary', maxLength: 400 }), (text) => {
      expect(base64url(sha256(text))).toBe(nodeDigest(text))
    }),
    { numRuns: 300 },
  )
})

test('utf8Length equals Buffer.byteLength, lone surrogates included', () => {
  for (const text of ['', 'abc', 'é', '€', '😀', '\ud800', 'a\udc00b', '\ud83d\ude00\ud83d'])
    expect(utf8Length(text)).toBe(Buffer.byteLength(text))
  fc.assert(
    fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (text) => {
      expect(utf8Length(text)).toBe(Buffer.byteLength(text))
    }),
    { numRuns: 300 },
  )
})

test('boundKey keeps keys up to 256 bytes and hashes longer ones as before', () => {
  expect(boundKey('é'.repeat(128))).toBe('é'.repeat(128))
  const long = 'é'.repeat(129)
  expect(boundKey(long)).toBe(`sha256:${nodeDigest(long)}`)
})

test('the reason phrases of 400-599 are http.STATUS_CODES', () => {
  const node: Record<number, string> = {}
  for (let status = 400; status < 600; status++) {
    if (STATUS_CODES[status] !== undefined) node[status] = STATUS_CODES[status]!
  }
  expect(ERROR_STATUS_TEXT).toEqual(node)
})

describe('rules on the web build', () => {
  const rules = parseRules(
    'domain: api\ndescriptors:\n  - key: user\n    rate_limit: { unit: minute, requests_per_unit: 1 }\n',
  ) as RuleSet
  const defaults = { framework: 'Fetch', resetStyle: 'epoch' as const }

  test('a compiled RuleSet is taken', async () => {
    const limiter = createWebOnlyHttpLimiter<HttpRequestLike, ResponseLike>(
      { rules, descriptors: () => [['user', 'u1']] },
      defaults,
    )
    const req = { ip: '10.0.0.1', headers: {} }
    const res = { writableFinished: false, destroyed: false, statusCode: 200, once() {}, off() {} }
    expect((await limiter.decide(req, res)).action).toBe('allow')
    expect((await limiter.decide(req, res)).action).toBe('reject')
  })

  test('a file path or a document is a ConfigError naming the way to compile them', () => {
    expect(() =>
      createWebOnlyHttpLimiter({ rules: 'rules.yaml', descriptors: () => [] }, defaults),
    ).toThrow(
      /`rules` must be a RuleSet or a RulesWatcher here .* pass loadRules\(pathOrDocument\) or watchRules\(path\) from @sluice\/rules; got "rules.yaml"/,
    )
    expect(() =>
      createWebOnlyHttpLimiter(
        { rules: { domain: 'api', descriptors: [] }, descriptors: () => [] },
        defaults,
      ),
    ).toThrow(/got "a rules document"/)
  })

  test("on Node, @sluice/rules' createHttpLimiter takes them, as the Node adapters do", () => {
    const limiter = createHttpLimiter(
      { rules: { domain: 'api', descriptors: [] }, descriptors: () => [] },
      defaults,
    )
    expect(limiter.rulesLimiter?.rules.domain).toBe('api')
  })
})
