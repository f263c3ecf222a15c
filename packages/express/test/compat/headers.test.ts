// The compatibility entry's headers, as express-rate-limit 8 writes them, through a real server.
import { createHash } from 'node:crypto'
import { rateLimit } from '@sluice/express/compat'
import { fixedNow, serve } from './serve'

/** draft-8's partition key of `key`, computed here from the draft's definition. */
function partitionKey(key: string): string {
  const digest = createHash('sha256').update(key).digest('hex')
  return Buffer.from(digest.slice(0, 12), 'utf8').toString('base64')
}

test('legacy X-RateLimit headers are on by default, Reset in epoch seconds', async () => {
  fixedNow(5_000_200)
  const { get } = await serve(rateLimit({ limit: 3, windowMs: 30_000 }))
  const response = await get().expect(200)
  expect(response.headers['x-ratelimit-limit']).toBe('3')
  expect(response.headers['x-ratelimit-remaining']).toBe('2')
  expect(response.headers['x-ratelimit-reset']).toBe('5031')
  expect(response.headers['ratelimit']).toBeUndefined()
  expect(response.headers['ratelimit-policy']).toBeUndefined()
})

test('standardHeaders true is draft-6: RateLimit-Policy, -Limit, -Remaining, -Reset', async () => {
  fixedNow(1_000_000)
  const { get } = await serve(rateLimit({ limit: 5, standardHeaders: true, legacyHeaders: false }))
  const response = await get().expect(200)
  expect(response.headers['ratelimit-policy']).toBe('5;w=60')
  expect(response.headers['ratelimit-limit']).toBe('5')
  expect(response.headers['ratelimit-remaining']).toBe('4')
  expect(response.headers['ratelimit-reset']).toBe('60')
  expect(response.headers['x-ratelimit-limit']).toBeUndefined()
})

test('draft-7 sends one combined RateLimit field and the policy', async () => {
  fixedNow(1_000_000)
  const { get } = await serve(rateLimit({ limit: 5, standardHeaders: 'draft-7' }))
  await get()
    .expect(200)
    .expect('ratelimit-policy', '5;w=60')
    .expect('ratelimit', 'limit=5, remaining=4, reset=60')
})

test('draft-8 names the quota <limit>-in-<window> and hashes the key into pk', async () => {
  fixedNow(1_000_000)
  const { get } = await serve(
    rateLimit({
      limit: 5,
      windowMs: 2 * 60 * 60 * 1000,
      standardHeaders: 'draft-8',
      keyGenerator: () => 'client-7',
    }),
  )
  await get()
    .expect(200)
    .expect('ratelimit-policy', `"5-in-2hrs"; q=5; w=7200; pk=:${partitionKey('client-7')}:`)
    .expect('ratelimit', '"5-in-2hrs"; r=4; t=7200')
})

test('stacked draft-8 limiters append their quota instead of overwriting', async () => {
  fixedNow(1_000_000)
  const common = { standardHeaders: 'draft-8' as const, keyGenerator: () => 'k' }
  const { get } = await serve(
    rateLimit({ ...common, limit: 2, windowMs: 10_000 }),
    rateLimit({ ...common, limit: 50, windowMs: 60 * 60 * 1000 }),
    rateLimit({ ...common, limit: 900, windowMs: 3 * 24 * 60 * 60 * 1000 }),
  )
  const pk = partitionKey('k')
  await get()
    .expect(200)
    .expect(
      'ratelimit-policy',
      `"2-in-10sec"; q=2; w=10; pk=:${pk}:, "50-in-1hr"; q=50; w=3600; pk=:${pk}:, "900-in-3days"; q=900; w=259200; pk=:${pk}:`,
    )
    .expect(
      'ratelimit',
      '"2-in-10sec"; r=1; t=10, "50-in-1hr"; r=49; t=3600, "900-in-3days"; r=899; t=259200',
    )
})

test('identifier names the draft-8 quota', async () => {
  fixedNow(1_000_000)
  const { get } = await serve(
    rateLimit({
      limit: 5,
      standardHeaders: 'draft-8',
      identifier: 'login',
      keyGenerator: () => 'k',
    }),
  )
  await get().expect(200).expect('ratelimit', '"login"; r=4; t=60')
})

test('an unknown draft sends no standard headers', async () => {
  const { get } = await serve(
    rateLimit({
      standardHeaders: 'draft-99' as unknown as 'draft-7',
      logger: { error() {}, warn() {} },
    }),
  )
  const response = await get().expect(200)
  expect(response.headers['ratelimit']).toBeUndefined()
  expect(response.headers['ratelimit-policy']).toBeUndefined()
  expect(response.headers['x-ratelimit-limit']).toBe('5')
})

test('Retry-After is sent on a rejection, and not when both header options are false', async () => {
  fixedNow(1_000_000)
  const withHeaders = await serve(rateLimit({ limit: 1 }))
  await withHeaders.get().expect(200)
  await withHeaders.get().expect(429).expect('retry-after', '60')

  const without = await serve(rateLimit({ limit: 1, legacyHeaders: false, standardHeaders: false }))
  await without.get().expect(200)
  const refused = await without.get().expect(429)
  expect(refused.headers['retry-after']).toBeUndefined()
  expect(refused.headers['x-ratelimit-limit']).toBeUndefined()
})

test('an identifier that tries to close its string is escaped: one quota entry, no forged one', async () => {
  fixedNow(1_000_000)
  const identifier = 'x"; q=999999; w=1, "evil'
  const { get } = await serve(
    rateLimit({ limit: 5, standardHeaders: 'draft-8', identifier, keyGenerator: () => 'k' }),
  )
  await get()
    .expect(200)
    .expect(
      'ratelimit-policy',
      `"x\\"; q=999999; w=1, \\"evil"; q=5; w=60; pk=:${partitionKey('k')}:`,
    )
    .expect('ratelimit', '"x\\"; q=999999; w=1, \\"evil"; r=4; t=60')
})

test('an identifier an sf-string cannot hold is refused at creation, or replaced per request', async () => {
  expect(() => rateLimit({ standardHeaders: 'draft-8', identifier: 'line\nbreak' })).toThrow(
    '`identifier` must be printable ASCII',
  )
  expect(() => rateLimit({ identifier: 7 as unknown as string })).toThrow(
    '`identifier` must be a string or a function',
  )
  fixedNow(1_000_000)
  const warn = jest.fn()
  const { get } = await serve(
    rateLimit({
      limit: 5,
      standardHeaders: 'draft-8',
      identifier: () => 'naïve\r\n',
      keyGenerator: () => 'k',
      logger: { warn, error: jest.fn() },
    }),
  )
  await get().expect(200).expect('ratelimit', '"5-in-1min"; r=4; t=60')
  await get().expect(200).expect('ratelimit', '"5-in-1min"; r=3; t=60')
  expect(warn).toHaveBeenCalledTimes(1)
  expect(String(warn.mock.calls[0][1])).toContain('`identifier` must return printable ASCII')
})
