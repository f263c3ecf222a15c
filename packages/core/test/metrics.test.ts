import { FailingStore } from '@sluice/testkit'
import { Registry } from 'prom-client'
import { createLimiter, prometheusMetrics } from '@sluice/core'
import { burst, counts, limiterAt } from './helpers'

/** A real store whose every call fails, as a dead Redis would. */
const failing = new FailingStore()

describe('prometheusMetrics', () => {
  test('counts a scripted sequence per policy name', async () => {
    const registry = new Registry()
    const metrics = prometheusMetrics({ registry })
    expect(metrics.registry).toBe(registry)

    // 10 per window: requests 9 and 10 leave <20% (used > 80%), 11 and 12 are rejected.
    const login = limiterAt(0, { limit: 10, window: 1000, name: 'login', onDecision: metrics })
    await burst(login.limiter, 'u', 12)
    // Shadow: 2 allowed (the second near the limit: 2 of 2 used), then 3 shadow-rejected.
    const shadow = limiterAt(0, {
      limit: 2,
      window: 1000,
      name: 'search',
      shadow: true,
      onDecision: metrics,
    })
    await burst(shadow.limiter, 'u', 5)
    // Store down: one fallback decision (allow), one thrown error.
    const open = createLimiter({
      limit: 5,
      window: 1000,
      name: 'api',
      store: failing,
      onStoreError: 'allow',
      onDecision: metrics,
    })
    await open.consume('u')
    const closed = createLimiter({
      limit: 5,
      window: 1000,
      name: 'api',
      store: failing,
      onDecision: metrics,
    })
    await expect(closed.consume('u')).rejects.toThrow('store call failed')

    expect(await counts(registry)).toEqual({
      sluice_decisions_allowed_total: { login: 10, search: 2, api: 1 },
      sluice_decisions_rejected_total: { login: 2 },
      sluice_decisions_shadow_rejected_total: { search: 3 },
      sluice_decisions_near_limit_total: { login: 2, search: 1 },
      sluice_store_errors_total: { api: 2 },
      sluice_fallback_decisions_total: { api: 1 },
    })
    const histogram = (await registry.getMetricsAsJSON()).find(
      (m) => m.name === 'sluice_store_latency_seconds',
    )
    const observations = (histogram?.values ?? []).filter(
      (v) => (v as { metricName?: string }).metricName === 'sluice_store_latency_seconds_count',
    )
    expect(Object.fromEntries(observations.map((v) => [v.labels.policy, v.value]))).toEqual({
      login: 12,
      search: 5,
      api: 2,
    })
    const text = await registry.metrics()
    expect(text).toContain('# TYPE sluice_decisions_rejected_total counter')
    expect(text).toContain('sluice_decisions_rejected_total{policy="login"} 2')
  })

  test('near-limit counts against the burst of a meter', async () => {
    const registry = new Registry()
    const { limiter } = limiterAt(0, {
      algorithm: 'gcra',
      limit: 100,
      window: 1000,
      burst: 10,
      name: 'g',
      onDecision: prometheusMetrics({ registry }),
    })
    // 9 and 10 used of a burst of 10 are over 80% (of the limit, 100, they would not be).
    await burst(limiter, 'k', 10)
    expect((await counts(registry)).sluice_decisions_near_limit_total).toEqual({ g: 2 })
  })

  test('a second recorder on the same registry reuses the metrics; prefix renames them', async () => {
    const registry = new Registry()
    const a = prometheusMetrics({ registry, prefix: 'edge_' })
    const b = prometheusMetrics({ registry, prefix: 'edge_' })
    await burst(limiterAt(0, { limit: 5, window: 1000, name: 'p', onDecision: a }).limiter, 'k', 1)
    await burst(limiterAt(0, { limit: 5, window: 1000, name: 'p', onDecision: b }).limiter, 'k', 1)
    expect((await counts(registry)).edge_decisions_allowed_total).toEqual({ p: 2 })
  })

  test('options are checked', () => {
    expect(() => prometheusMetrics({ registry: new Registry(), prefix: 'bad-prefix' })).toThrow(
      '`prefix` must be a Prometheus metric name prefix',
    )
    expect(() => prometheusMetrics({ registry: new Registry(), nearLimitRatio: 1 })).toThrow(
      '`nearLimitRatio` must be a number from 0 up to (not including) 1; got 1',
    )
  })
})
