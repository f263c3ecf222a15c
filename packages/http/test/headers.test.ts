import { createLimiter, type Decision } from '@sluice/core'
import { resolvePolicy } from '@sluice/core/adapter'
import { type HeaderOptions } from '@sluice/http'
import {
  checkStandardHeaders,
  createHeaderWriter,
  createHttpLimiter,
  DEFAULT_LEGACY_NAMES,
  responseTimes,
} from '@sluice/http'

const T0 = 3_600_000 * 1000 // aligned to the hour (and so to every shorter window)

async function decisions(options: Parameters<typeof createLimiter>[0], n: number, now = T0) {
  const limiter = createLimiter({ clock: () => now, ...options })
  const out: Decision[] = []
  for (let i = 0; i < n; i++) out.push(await limiter.consume('k'))
  return out
}

function write(decision: Decision, now: number, options: Partial<HeaderOptions> = {}) {
  const full: HeaderOptions = {
    legacy: DEFAULT_LEGACY_NAMES,
    standard: false,
    resetStyle: 'epoch',
    retryAfter: true,
    ...options,
  }
  return Object.fromEntries(
    createHeaderWriter(full)(decision, responseTimes(decision, now, full.resetStyle)),
  )
}

describe('rate-limit headers', () => {
  const fixed = { algorithm: 'fixed-window', limit: 5, window: '1m' } as const

  test('legacy: epoch seconds or seconds from now', async () => {
    const [d] = await decisions(fixed, 1, T0 + 20_000)
    expect(write(d, T0 + 20_000)).toEqual({
      'X-RateLimit-Limit': '5',
      'X-RateLimit-Remaining': '4',
      'X-RateLimit-Reset': String(T0 / 1000 + 60),
    })
    expect(write(d, T0 + 20_000, { resetStyle: 'delta' })['X-RateLimit-Reset']).toBe('40')
  })

  test('one writer, limits that change between responses (tiers): each its own limit text', async () => {
    const writer = createHeaderWriter({
      legacy: DEFAULT_LEGACY_NAMES,
      standard: false,
      resetStyle: 'delta',
      retryAfter: true,
    })
    const limits = [5, 5, 7, 1_000_000_000, 5]
    const written = []
    for (const limit of limits) {
      const [d] = await decisions({ ...fixed, limit }, 1)
      written.push(
        Object.fromEntries(writer(d, responseTimes(d, T0, 'delta')))['X-RateLimit-Limit'],
      )
    }
    expect(written).toEqual(['5', '5', '7', '1000000000', '5'])
  })

  test('RateLimit-Policy lists the policies of each decision, whichever came first', async () => {
    // As with rules: two requests share their first policy and differ after it.
    const route = resolvePolicy({ limit: 50, window: '1m', name: 'api.route' })
    const user = resolvePolicy({ limit: 2, window: '1m', name: 'per-user' })
    const outcome = (policy: typeof route) => ({
      policy,
      allowed: true,
      remaining: 1,
      resetMs: 60_000,
      retryAfterMs: 0,
      delayMs: 0,
    })
    const decisionOf = (...policies: (typeof route)[]): Decision =>
      ({
        ...outcome(policies[0]),
        limit: policies[0].limit,
        at: T0,
        degraded: false,
        policies: policies.map(outcome),
      }) as unknown as Decision
    const anonymous = decisionOf(route)
    const signedIn = decisionOf(route, user)
    for (const standard of ['draft-8', 'draft-6'] as const) {
      const writer = createHeaderWriter({
        legacy: false,
        standard,
        resetStyle: 'delta',
        retryAfter: true,
      })
      const policyOf = (d: Decision) =>
        Object.fromEntries(writer(d, responseTimes(d, T0, 'delta')))['RateLimit-Policy']
      const seen = [anonymous, signedIn, anonymous, signedIn].map(policyOf)
      expect(seen).toEqual(
        standard === 'draft-8'
          ? [
              '"api.route";q=50;w=60',
              '"api.route";q=50;w=60, "per-user";q=2;w=60',
              '"api.route";q=50;w=60',
              '"api.route";q=50;w=60, "per-user";q=2;w=60',
            ]
          : ['50;w=60', '50;w=60, 2;w=60', '50;w=60', '50;w=60, 2;w=60'],
      )
    }
  })

  test('draft-6, draft-7, draft-8 and draft-10 strings', async () => {
    const [d] = await decisions(fixed, 1)
    expect(write(d, T0, { legacy: false, standard: 'draft-6' })).toEqual({
      'RateLimit-Policy': '5;w=60',
      'RateLimit-Limit': '5',
      'RateLimit-Remaining': '4',
      'RateLimit-Reset': '60',
    })
    expect(write(d, T0, { legacy: false, standard: 'draft-7' })).toEqual({
      'RateLimit-Policy': '5;w=60',
      RateLimit: 'limit=5, remaining=4, reset=60',
    })
    for (const standard of ['draft-8', 'draft-10'] as const) {
      expect(write(d, T0, { legacy: false, standard })).toEqual({
        'RateLimit-Policy': '"5-per-1m";q=5;w=60',
        RateLimit: '"5-per-1m";r=4;t=60',
      })
    }
  })

  test('sliding-window announces t within its window: when its newest requests begin to fade', async () => {
    const sliding = { algorithm: 'sliding-window', limit: 5, window: '10s' } as const
    // Three at the window's start, two more 4 s later: the second burst is the newest counted.
    const limiter = createLimiter({ clock: () => now, ...sliding })
    let now = T0
    for (let i = 0; i < 3; i++) await limiter.consume('k')
    now = T0 + 4_000
    await limiter.consume('k')
    const last = await limiter.consume('k')
    expect(write(last, now, { legacy: false, standard: 'draft-10' }).RateLimit).toBe(
      '"5-per-10s";r=0;t=6',
    )
    // In the next window the requests counted fade: one more passes, and t counts to the end of
    // this window (when it begins to fade in turn), never 20.
    now = T0 + 12_000
    const next = await limiter.consume('k')
    expect(next.allowed).toBe(true)
    expect(write(next, now, { legacy: false, standard: 'draft-10' }).RateLimit).toBe(
      '"5-per-10s";r=0;t=8',
    )
  })

  test('policy names are sf-strings: quotes and backslashes escaped', async () => {
    const [d] = await decisions({ ...fixed, name: 'a "b" \\c' }, 1)
    expect(write(d, T0, { legacy: false, standard: 'draft-8' })['RateLimit-Policy']).toBe(
      '"a \\"b\\" \\\\c";q=5;w=60',
    )
  })

  test('several limits: one list each; draft-6/7 list the policies and report the binding one', async () => {
    const limits = [
      { limit: 10, window: '1s', name: 'second' },
      { limit: 500, window: '1h', name: 'hour' },
    ]
    const [d] = await decisions({ algorithm: 'fixed-window', limits }, 1)
    expect(write(d, T0, { legacy: false, standard: 'draft-8' })).toEqual({
      'RateLimit-Policy': '"second";q=10;w=1, "hour";q=500;w=3600',
      RateLimit: '"second";r=9;t=1, "hour";r=499;t=3600',
    })
    expect(write(d, T0, { legacy: false, standard: 'draft-7' })).toEqual({
      'RateLimit-Policy': '10;w=1, 500;w=3600',
      RateLimit: 'limit=10, remaining=9, reset=1',
    })
  })

  test('rejections: Retry-After rounded up, equal to the announced reset; never earlier with epoch resets', async () => {
    const now = T0 + 700
    const rejected = (
      await decisions({ algorithm: 'sliding-log', limit: 1, window: 1500 }, 2, now)
    )[1]
    expect(rejected.retryAfterMs).toBe(1500)
    const delta = write(rejected, now, { resetStyle: 'delta', standard: 'draft-7' })
    expect(delta['Retry-After']).toBe('2')
    expect(delta['X-RateLimit-Reset']).toBe('2')
    expect(delta['X-RateLimit-Retry-After']).toBe('2')
    expect(delta.RateLimit).toBe('limit=1, remaining=0, reset=2')
    const epoch = write(rejected, now)
    expect(epoch['X-RateLimit-Reset']).toBe(String(T0 / 1000 + 3))
    // From 0.7 s past the second, the announced epoch second is 2.3 s away: Retry-After says 3.
    expect(epoch['Retry-After']).toBe('3')
  })

  test('a rejection of a cost over capacity (retryAfterMs Infinity) sends no Retry-After: no wait helps', async () => {
    const limiter = createLimiter({ limit: 2, window: '10s', clock: () => T0 })
    const d = await limiter.consume('k', { cost: 5 })
    expect(d.retryAfterMs).toBe(Infinity)
    const headers = write(d, T0, { resetStyle: 'delta' })
    expect(headers['Retry-After']).toBeUndefined()
    expect(headers['X-RateLimit-Retry-After']).toBeUndefined()
    expect(headers['X-RateLimit-Reset']).toBe('10')
  })

  test('omitted headers are left out per outcome', async () => {
    const [ok, , , , , rejected] = await decisions(fixed, 6)
    const options = { omitWhenAllowed: ['x-ratelimit-reset'], omitWhenRejected: ['retry-after'] }
    expect(write(ok, T0, options)['X-RateLimit-Reset']).toBeUndefined()
    expect(write(rejected, T0, options)['Retry-After']).toBeUndefined()
    expect(write(rejected, T0, options)['X-RateLimit-Reset']).toBe(String(T0 / 1000 + 60))
  })

  test('standardHeaders option: true is draft-6, unknown drafts are a ConfigError', () => {
    expect(checkStandardHeaders(true)).toBe('draft-6')
    expect(checkStandardHeaders(undefined)).toBe(false)
    expect(() => checkStandardHeaders('draft-9')).toThrow(
      /`standardHeaders` must be false, true or one of/,
    )
  })
})

describe('structured header values (RFC 9651)', () => {
  test('a limit name is written as an sf-string: quotes and backslashes escaped', async () => {
    const [d] = await decisions({ ...{ limit: 5, window: '1m' }, name: 'a"; q=9, "b\\' }, 1)
    const headers = write(d, T0, { legacy: false, standard: 'draft-8' })
    expect(headers['RateLimit-Policy']).toBe('"a\\"; q=9, \\"b\\\\";q=5;w=60')
  })

  test('characters an sf-string cannot hold are percent-encoded as UTF-8', async () => {
    const [d] = await decisions({ limit: 5, window: '1m', name: 'tenant\u00e9\n' }, 1)
    const headers = write(d, T0, { legacy: false, standard: 'draft-8' })
    expect(headers['RateLimit-Policy']).toBe('"tenant%C3%A9%0A";q=5;w=60')
  })

  test('a header name that is no token is refused when the writer is made', () => {
    const legacy = { ...DEFAULT_LEGACY_NAMES, remaining: 'X-Remaining\r\nSet-Cookie: a=b' }
    expect(() =>
      createHeaderWriter({ legacy, standard: false, resetStyle: 'epoch', retryAfter: true }),
    ).toThrow('`header name (remaining)` must be a header name')
  })

  test("a fixed limit's name an sf-string cannot hold is refused at creation for draft-8 and later", () => {
    const make = (standardHeaders: 'draft-7' | 'draft-8' | 'draft-10', name: string) =>
      createHttpLimiter(
        {
          limits: [
            { limit: 5, window: '1m' },
            { limit: 50, window: '1h', name },
          ],
          standardHeaders,
        },
        { framework: 'Test', resetStyle: 'epoch' },
      )
    expect(() => make('draft-8', 'hourly\n')).toThrow('`limits[1].name` must be printable ASCII')
    expect(() => make('draft-10', 'h\u00e9')).toThrow('`limits[1].name` must be printable ASCII')
    expect(() => make('draft-7', 'hourly\n')).not.toThrow()
    expect(() => make('draft-8', 'a "quoted" name')).not.toThrow()
  })
})
