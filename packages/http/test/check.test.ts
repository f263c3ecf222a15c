// The pipeline's read-only check and its refusal counting: what `check` reports and that it
// counts nothing, per-request windows, and the options' checks.
import { createHttpLimiter, type HttpRequestLike } from '@sluice/http'
// Rules documents are read by @sluice/rules' host (Node's): the same pipeline.
import { createHttpLimiter as createNodeHttpLimiter } from '@sluice/rules'
import { DEFAULTS, RES } from './pipeline-fixtures'

const T0 = 60_000 * 30_000

const request = (ip: string): HttpRequestLike => ({ ip, headers: {} })

test('check reads the key under its limit and its rejections in a row, counting nothing', async () => {
  let now = T0
  const http = createHttpLimiter(
    { limit: 2, window: '10s', algorithm: 'fixed-window', clock: () => now, countRefusals: true },
    DEFAULTS,
  )
  const req = request('10.0.0.1')
  const fresh = await http.check(req)
  expect([fresh!.key, fresh!.decision.remaining, fresh!.refusals]).toEqual(['10.0.0.1', 2, 0])
  for (let i = 0; i < 4; i++) await http.decide(req, RES)
  for (let i = 0; i < 3; i++) {
    const checked = await http.check(req)
    expect([checked!.decision.remaining, checked!.decision.resetMs, checked!.refusals]).toEqual([
      0, 10_000, 2,
    ])
  }
  now += 10_000
  const admitted = await http.decide(req, RES)
  expect(admitted.action).toBe('allow')
  const after = await http.check(req)
  expect([after!.decision.remaining, after!.refusals]).toEqual([1, 0])
})

test('check: undefined for a request decide would pass or deny; rules are not read', async () => {
  const http = createHttpLimiter(
    { limit: 1, window: '1m', allowList: ['10.0.0.1'], denyList: ['10.0.0.2'] },
    DEFAULTS,
  )
  expect(await http.check(request('10.0.0.1'))).toBeUndefined()
  expect(await http.check(request('10.0.0.2'))).toBeUndefined()
  expect((await http.check(request('10.0.0.3')))!.refusals).toBe(0)
  const rules = createNodeHttpLimiter(
    { rules: { domain: 'd', descriptors: [] }, descriptors: () => [] },
    DEFAULTS,
  )
  await expect(rules.check(request('10.0.0.3'))).rejects.toThrow(
    'check() reads `limit` or `limits`, not `rules`',
  )
})

test('check under per-request limits and windows reads the request’s own tier', async () => {
  const http = createHttpLimiter(
    {
      limit: (_req, key) => (key === '10.0.0.1' ? 3 : 0),
      window: (_req, key) => (key === '10.0.0.1' ? '1m' : 5000),
    },
    DEFAULTS,
  )
  const gold = await http.check(request('10.0.0.1'))
  expect([gold!.decision.limit, gold!.decision.policy.windowMs]).toEqual([3, 60_000])
  const none = await http.check(request('10.0.0.9'))
  expect([none!.decision.limit, none!.decision.allowed, none!.decision.retryAfterMs]).toEqual([
    0,
    false,
    5000,
  ])
})

test('legacyHeaders and retryAfterHeader are true or false: a string "false" is an error, not true', () => {
  const make = (options: object) => () => createNodeHttpLimiter({ limit: 1, ...options }, DEFAULTS)
  expect(make({ legacyHeaders: 'false' })).toThrow(
    '`legacyHeaders` must be true or false; got "false"',
  )
  expect(make({ retryAfterHeader: 0 })).toThrow('`retryAfterHeader` must be true or false; got 0')
  expect(make({ legacyHeaders: false, retryAfterHeader: true })).not.toThrow()
})

test('backoff and countRefusals are checked once, naming the option and the value', () => {
  const make = (options: object) => () => createNodeHttpLimiter({ limit: 1, ...options }, DEFAULTS)
  expect(make({ backoff: 'triple' })).toThrow(
    "`backoff` must be 'restart' or 'double'; got \"triple\"",
  )
  expect(make({ countRefusals: 'yes' })).toThrow('`countRefusals` must be true or false')
  expect(make({ ban: 1, countRefusals: false })).toThrow(
    '`countRefusals` must be true or unset with `ban` or `backoff` (they read the count); got false',
  )
  expect(
    make({
      limit: undefined,
      backoff: 'restart',
      rules: { domain: 'd', descriptors: [] },
      descriptors: () => [],
    }),
  ).toThrow('`backoff` must be unset when `rules` is given')
  expect(
    make({ limits: [{ limit: 1, window: '1s' }], limit: undefined, window: () => '1s' }),
  ).toThrow('`window` must be a duration when `limits` is given')
})
