/**
 * Owns the scenarios of the client IP key: IPv6 grouping, proxies, bad keys.
 */
import { ConfigError } from '@sluice/core'
import { resetProxyWarnings } from '@sluice/http'
import { captureLogger, type ScenarioContext } from './harness'

export function registerClientIpCases(ctx: ScenarioContext): void {
  const { start } = ctx
  test('IPv6 clients are grouped by /64 (trusted proxy)', async () => {
    const logger = captureLogger()
    const agent = await start({ limit: 1, window: '1m', logger }, { trustProxy: true })
    await agent.get('/').set('X-Forwarded-For', '2001:db8:1:2::1').expect(200)
    await agent.get('/').set('X-Forwarded-For', '2001:db8:1:2:ffff:ffff:ffff:ffff').expect(429)
    await agent.get('/').set('X-Forwarded-For', '2001:db8:1:3::1').expect(200)
    expect(logger.warnings).toEqual([])
  })

  test('ipv6Subnet is configurable (false keys each address)', async () => {
    const agent = await start({ limit: 1, window: '1m', ipv6Subnet: false }, { trustProxy: true })
    await agent.get('/').set('X-Forwarded-For', '2001:db8::1').expect(200)
    await agent.get('/').set('X-Forwarded-For', '2001:db8::2').expect(200)
    await agent.get('/').set('X-Forwarded-For', '2001:db8:0:0:0:0:0:1').expect(429)
  })

  test('a forwarded address with a port keys by the address, whatever the port', async () => {
    const agent = await start({ limit: 1, window: '1m' }, { trustProxy: true })
    await agent.get('/').set('X-Forwarded-For', '203.0.113.1:1111').expect(200)
    await agent.get('/').set('X-Forwarded-For', '203.0.113.1:2222').expect(429)
    await agent.get('/').set('X-Forwarded-For', '[2001:db8::1]:2222').expect(200)
    await agent.get('/').set('X-Forwarded-For', '[2001:db8::2]:3333').expect(429)
  })

  test('an allowList CIDR whose prefix does not fit the address is a ConfigError', async () => {
    await expect(start({ limit: 1, window: '1m', allowList: ['10.0.0.0/33'] })).rejects.toThrow(
      /`allowList\[\]` must be a CIDR range whose prefix length fits the address.*got "10.0.0.0\/33"/,
    )
    await expect(start({ limit: 1, window: '1m', denyList: ['2001:db8::/129'] })).rejects.toThrow(
      ConfigError,
    )
  })

  test('IPv4-mapped IPv6 in any notation is the IPv4 client', async () => {
    const agent = await start({ limit: 1, window: '1m' }, { trustProxy: true })
    await agent.get('/').set('X-Forwarded-For', '10.0.0.1').expect(200)
    await agent.get('/').set('X-Forwarded-For', '::ffff:10.0.0.1').expect(429)
    await agent.get('/').set('X-Forwarded-For', '::ffff:a00:1').expect(429)
    await agent.get('/').set('X-Forwarded-For', '0:0:0:0:0:ffff:0a00:0001').expect(429)
    await agent.get('/').set('X-Forwarded-For', '10.0.0.2').expect(200)
  })

  test('a key function returning null, empty, NaN or an object limits by client IP, warned once', async () => {
    const logger = captureLogger()
    const bad: Record<string, unknown> = { null: null, empty: '', nan: NaN, object: {} }
    const agent = await start(
      {
        limit: 1,
        window: '1m',
        logger,
        key: (req) => bad[String(req.headers['x-kind'])] as string,
      },
      { trustProxy: true },
    )
    for (const [i, kind] of Object.keys(bad).entries()) {
      // Two clients with the same bad key: each gets a bucket of its own, none is shared.
      const first = `10.1.${i}.1`
      const second = `10.1.${i}.2`
      await agent.get('/?q=1').set('x-kind', kind).set('X-Forwarded-For', first).expect(200)
      await agent.get('/?q=1').set('x-kind', kind).set('X-Forwarded-For', second).expect(200)
      await agent.get('/?q=1').set('x-kind', kind).set('X-Forwarded-For', first).expect(429)
    }
    const badKeyWarnings = logger.warnings.filter((w) => w.includes('`key` returned'))
    expect(badKeyWarnings).toEqual([
      expect.stringMatching(/^\[sluice\] `key` returned null for GET \/: not a key/),
    ])
  })

  test('numeric and bigint keys are keys; onBadKey: throw answers 500', async () => {
    const agent = await start({
      limit: 1,
      window: '1m',
      key: (req) =>
        (req.headers['x-user'] === 'big'
          ? 10n ** 20n
          : Number(req.headers['x-user'])) as unknown as string,
    })
    await agent.get('/').set('x-user', '7').expect(200)
    await agent.get('/').set('x-user', '7').expect(429)
    await agent.get('/').set('x-user', '8').expect(200)
    await agent.get('/').set('x-user', 'big').expect(200)
    await agent.get('/').set('x-user', 'big').expect(429)
    const strict = await start({
      limit: 5,
      window: '1m',
      onBadKey: 'throw',
      key: () => null as unknown as string,
    })
    await strict.get('/').expect(500)
  })

  test('X-Forwarded-For is ignored without trust, with one warning per process', async () => {
    resetProxyWarnings()
    const logger = captureLogger()
    const agent = await start({ limit: 1, window: '1m', logger })
    await agent.get('/').set('X-Forwarded-For', '1.1.1.1').expect(200)
    await agent.get('/').set('X-Forwarded-For', '2.2.2.2').expect(429)
    await agent.get('/').set('X-Forwarded-For', '3.3.3.3').expect(429)
    // Fetch adapters have no trust-proxy setting to warn about: their `ip` option decides.
    if (ctx.harness.proxyTrust === false) {
      expect(logger.warnings).toEqual([])
      return
    }
    expect(logger.warnings).toHaveLength(1)
    expect(logger.warnings[0]).toMatch(
      /X-Forwarded-For but .* does not trust its sender \(127\.0\.0\.1\)/,
    )
    // A second limiter in the same process does not repeat it.
    const again = captureLogger()
    const other = await start({ limit: 1, window: '1m', logger: again })
    await other.get('/').set('X-Forwarded-For', '4.4.4.4').expect(200)
    expect(again.warnings).toEqual([])
  })
}
