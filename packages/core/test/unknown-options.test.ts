import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Registry } from 'prom-client'
import {
  ConfigError,
  createLimiter,
  eventLoopSpare,
  localTier,
  MemoryStore,
  prometheusMetrics,
  type LimiterOptions,
} from '@sluice/core'
import { ipKey } from '@sluice/http'
import { loadRules, parseRules, watchRules } from '@sluice/rules'
import { makeTrace, renderSvg, simulate } from '@sluice/cli'

/** The error `make` throws: a ConfigError naming the unknown option, its value and where. */
function refusal(make: () => unknown): string {
  try {
    make()
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError)
    return (error as ConfigError).message
  }
  throw new Error('the typo passed')
}

const RULES =
  'domain: api\ndescriptors:\n  - key: user\n    rate_limit: { unit: minute, requests_per_unit: 5 }\n'

describe('a typo in any options object is refused by name', () => {
  test('localTier: `maxshare`', () => {
    expect(refusal(() => localTier(new MemoryStore(), { maxshare: 0.1 } as never))).toBe(
      'unknown option `maxshare` for localTier (value 0.1)',
    )
    // Spelled right, the same options are taken.
    expect(localTier(new MemoryStore(), { maxShare: 0.1 })).toBeDefined()
  })

  test('ipKey: `ipv6subnet`', () => {
    expect(refusal(() => ipKey({ ipv6subnet: 56 } as never))).toBe(
      'unknown option `ipv6subnet` for ipKey (value 56)',
    )
    expect(ipKey({ ipv6Subnet: 56 })({ ip: '2001:db8:1:2::1' } as never)).toBe(
      ipKey({ ipv6Subnet: 56 })({ ip: '2001:db8:1:ff::9' } as never),
    )
  })

  test('an entry of `limits`: `brust`', () => {
    const options = {
      algorithm: 'token-bucket',
      limits: [
        { limit: 10, window: '1s' },
        { limit: 100, window: '1m', brust: 3 },
      ],
    } as LimiterOptions
    expect(refusal(() => createLimiter(options))).toBe(
      'unknown option `brust` for limits[1] (value 3)',
    )
    expect(refusal(() => simulate([], options as never))).toBe(
      'unknown option `brust` for limits[1] (value 3)',
    )
  })

  test('throttle modes and eventLoopSpare', () => {
    expect(
      refusal(() =>
        createLimiter({ limit: 1, window: 1000, throttle: { soft: 0.1, elastc: 2 } as never }),
      ),
    ).toBe('unknown option `elastc` for throttle { soft } (value 2)')
    expect(
      refusal(() =>
        createLimiter({
          limit: 1,
          window: 1000,
          throttle: { elastic: 2, spar: () => true } as never,
        }),
      ),
    ).toBe('unknown option `spar` for throttle { elastic } (value function spar)')
    expect(refusal(() => eventLoopSpare({ treshold: 0.5 } as never))).toBe(
      'unknown option `treshold` for eventLoopSpare (value 0.5)',
    )
  })

  test('prometheusMetrics', () => {
    expect(
      refusal(() => prometheusMetrics({ registry: new Registry(), nearLimit: 0.5 } as never)),
    ).toBe('unknown option `nearLimit` for prometheusMetrics (value 0.5)')
  })

  test('loadRules, parseRules and watchRules', () => {
    expect(refusal(() => parseRules(RULES, { sourc: 'x' } as never))).toBe(
      'unknown option `sourc` for parseRules (value "x")',
    )
    const dir = mkdtempSync(join(tmpdir(), 'sluice-typos-'))
    try {
      const file = join(dir, 'rules.yaml')
      writeFileSync(file, RULES)
      expect(refusal(() => loadRules(file, { sorce: 'x' } as never))).toBe(
        'unknown option `sorce` for loadRules (value "x")',
      )
      expect(refusal(() => watchRules(file, { debounce: 5 } as never))).toBe(
        'unknown option `debounce` for watchRules (value 5)',
      )
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test('makeTrace and renderSvg', () => {
    expect(
      refusal(() => makeTrace('steady', { limit: 5, windowMs: 1000, window: 3 } as never)),
    ).toBe('unknown option `window` for makeTrace (value 3)')
    const result = simulate([{ at: 0 }], { limit: 5, window: 1000 })
    expect(refusal(() => renderSvg(result, { heigth: 100 } as never))).toBe(
      'unknown option `heigth` for renderSvg (value 100)',
    )
  })
})
