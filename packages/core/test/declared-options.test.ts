// Each layer's options are declared once (see testkit's testDeclaredOptions); what the
// declaration does at creation: unknown names, defaults, checks, a frozen result. The
// adapters' layer (HTTP_OPTIONS) is tested in @sluice/http.
import { join } from 'node:path'
import { testDeclaredOptions } from '@sluice/testkit'
import { LIMITER_OPTIONS } from '../src/limiter/settings'
import { LIMIT_OPTIONS } from '../src/options'
import { TIER_OPTIONS } from '../src/tier/options'
import { PROMETHEUS_OPTIONS } from '../src/metrics/prometheus'
import { MEMORY_STORE_OPTIONS } from '../src/store/memory-store'
import { EVENT_LOOP_SPARE_OPTIONS } from '../src/throttle'
import { createLimiter } from '@sluice/core'

const SRC = join(__dirname, '..', 'src')

testDeclaredOptions(LIMIT_OPTIONS, [[join(SRC, 'options.ts'), 'LimitOptions']])
testDeclaredOptions(LIMITER_OPTIONS, [
  [join(SRC, 'options.ts'), 'LimitOptions'],
  [join(SRC, 'options.ts'), 'LimiterOptions'],
])
testDeclaredOptions(TIER_OPTIONS, [[join(SRC, 'tier', 'options.ts'), 'LocalTierOptions']])
testDeclaredOptions(MEMORY_STORE_OPTIONS, [
  [join(SRC, 'store', 'memory-store.ts'), 'MemoryStoreOptions'],
])
testDeclaredOptions(EVENT_LOOP_SPARE_OPTIONS, [[join(SRC, 'throttle.ts'), 'EventLoopSpareOptions']])
testDeclaredOptions(PROMETHEUS_OPTIONS, [
  [join(SRC, 'metrics', 'prometheus.ts'), 'PrometheusMetricsOptions'],
])

test('MemoryStore, localTier and prometheusMetrics resolve to their declared defaults', () => {
  expect(MEMORY_STORE_OPTIONS.resolve({ maxKeys: null as never })).toEqual({
    maxKeys: 1_000_000,
    sweepIntervalMs: 60_000,
    maxBytes: 2 ** 30,
  })
  expect(EVENT_LOOP_SPARE_OPTIONS.resolve({ sampleMs: null as never })).toEqual({
    threshold: 0.7,
    sampleMs: 100,
  })
  expect(() => EVENT_LOOP_SPARE_OPTIONS.resolve({ threshold: 2 })).toThrow(
    '`threshold` must be a number in (0, 1]; got 2',
  )
  expect(() => MEMORY_STORE_OPTIONS.resolve({ maxBytes: 0 })).toThrow(
    '`maxBytes` must be a positive integer; got 0',
  )
  // Node runs a longer interval every 1 ms, with a TimeoutOverflowWarning.
  expect(() => MEMORY_STORE_OPTIONS.resolve({ sweepIntervalMs: 2 ** 31 })).toThrow(
    '`sweepIntervalMs` must be a whole number of ms from 1 to 2147483647; got 2147483648',
  )
  expect(MEMORY_STORE_OPTIONS.resolve({ sweepIntervalMs: 2 ** 31 - 1 }).sweepIntervalMs).toBe(
    2 ** 31 - 1,
  )
  expect(TIER_OPTIONS.resolve({})).toEqual({ leaseMs: undefined, maxShare: 0.02 })
  expect(() => TIER_OPTIONS.resolve({ leaseMs: 0 })).toThrow(
    '`leaseMs` must be a positive integer number of ms; got 0',
  )
  expect(() => TIER_OPTIONS.resolve({ lease: 5 } as never)).toThrow(
    'unknown option `lease` for localTier (value 5)',
  )
  const metrics = PROMETHEUS_OPTIONS.resolve({ prefix: null as never })
  expect(metrics).toMatchObject({ prefix: 'sluice_', nearLimitRatio: 0.8 })
  expect(metrics.buckets).toHaveLength(12)
  expect(() => PROMETHEUS_OPTIONS.resolve({ prefix: 'a-b' })).toThrow(
    '`prefix` must be a Prometheus metric name prefix ([a-zA-Z_:][a-zA-Z0-9_:]*); got "a-b"',
  )
})

test('a name not declared is refused, naming it and its value', () => {
  expect(() => createLimiter({ limit: 1, window: 1000, brust: 2 } as never)).toThrow(
    'unknown option `brust` for createLimiter (value 2)',
  )
})

test('resolve fills in the declared defaults and freezes the result', () => {
  const settings = LIMITER_OPTIONS.resolve({ limit: 1, window: 1000 })
  expect(Object.isFrozen(settings)).toBe(true)
  expect(settings).toMatchObject({
    algorithm: 'sliding-window',
    onStoreError: 'throw',
    shadow: false,
    timeoutMs: 1000,
  })
  expect(() => LIMITER_OPTIONS.resolve({ limit: 1, window: 1000, shadow: 'yes' as never })).toThrow(
    '`shadow` must be a boolean; got "yes"',
  )
})
