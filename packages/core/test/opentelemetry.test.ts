import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import {
  AggregationTemporality,
  DataPointType,
  MeterProvider,
  MetricReader,
  type MetricData,
} from '@opentelemetry/sdk-metrics'
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base'
import { FailingStore } from '@sluice/testkit'
import { Registry } from 'prom-client'
import {
  createLimiter,
  localTier,
  MemoryStore,
  openTelemetryMetrics,
  prometheusMetrics,
  type OtelMeter,
} from '@sluice/core'
import { burst, counts, limiterAt } from './helpers'

/** The SDK's own pull reader: `collect()` returns what an exporter would be sent. */
class TestReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

function sdkMeter() {
  const reader = new TestReader({
    aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE,
  })
  const provider = new MeterProvider({ readers: [reader] })
  return { meter: provider.getMeter('test'), reader }
}

async function collected(reader: MetricReader): Promise<Map<string, MetricData>> {
  const { resourceMetrics, errors } = await reader.collect()
  expect(errors).toEqual([])
  const byName = new Map<string, MetricData>()
  for (const scope of resourceMetrics.scopeMetrics) {
    for (const metric of scope.metrics) byName.set(metric.descriptor.name, metric)
  }
  return byName
}

/** Sum and gauge values by metric name and one attribute, as `counts` reads prom-client. */
function values(metrics: Map<string, MetricData>, label: string) {
  const out: Record<string, Record<string, number>> = {}
  for (const [name, metric] of metrics) {
    if (metric.dataPointType === DataPointType.HISTOGRAM) continue
    for (const point of metric.dataPoints) {
      out[name] ??= {}
      out[name][String(point.attributes[label])] = point.value as number
    }
  }
  return out
}

/** Every data point of a watched source (attribute `name`), as sorted `metric{attributes} value` lines. */
function watchedPoints(metrics: Map<string, MetricData>): string[] {
  const lines: string[] = []
  for (const [name, metric] of metrics) {
    for (const point of metric.dataPoints) {
      if ('name' in point.attributes)
        lines.push(`${name}${JSON.stringify(point.attributes)} ${String(point.value)}`)
    }
  }
  return lines.sort()
}

const failing = new FailingStore()

/** A logger that keeps what it is told. */
function logged() {
  const warnings: string[] = []
  return { warnings, logger: { warn: (message: string) => void warnings.push(message) } }
}

/** The instrument or source each warning names, in the order they were logged. */
const blamed = (warnings: string[]) => warnings.map((w) => /[`"]([\w-]+)[`"]/.exec(w)?.[1])

const throwing = (message: string) => () => {
  throw new Error(message)
}

/** The SDK meter, with some of its instruments replaced. */
function meterWith(meter: OtelMeter, replaced: Partial<OtelMeter>): OtelMeter {
  return {
    createCounter: meter.createCounter.bind(meter),
    createHistogram: meter.createHistogram.bind(meter),
    createObservableGauge: meter.createObservableGauge.bind(meter),
    createObservableCounter: meter.createObservableCounter.bind(meter),
    ...replaced,
  }
}

/** The scripted sequence of the Prometheus test, for both recorders at once. */
async function script(onDecision: (event: never) => void) {
  const hook = onDecision as Parameters<typeof createLimiter>[0]['onDecision']
  await burst(
    limiterAt(0, { limit: 10, window: 1000, name: 'login', onDecision: hook }).limiter,
    'u',
    12,
  )
  const shadow = limiterAt(0, {
    limit: 2,
    window: 1000,
    name: 'search',
    shadow: true,
    onDecision: hook,
  })
  await burst(shadow.limiter, 'u', 5)
  const common = { limit: 5, window: 1000, name: 'api', store: failing, onDecision: hook }
  await createLimiter({ ...common, onStoreError: 'allow' }).consume('u')
  await expect(createLimiter(common).consume('u')).rejects.toThrow('store call failed')
}

describe('openTelemetryMetrics', () => {
  test('records the same counters, labels and histogram as prometheusMetrics', async () => {
    const { meter, reader } = sdkMeter()
    const registry = new Registry()
    const otel = openTelemetryMetrics({ meter })
    const prom = prometheusMetrics({ registry })
    expect(otel.meter).toBe(meter)
    await script(((event) => {
      otel(event)
      prom(event)
    }) as (event: never) => void)

    const metrics = await collected(reader)
    const counters = values(metrics, 'policy')
    const expected = {
      sluice_decisions_allowed_total: { login: 10, search: 2, api: 1 },
      sluice_decisions_rejected_total: { login: 2 },
      sluice_decisions_shadow_rejected_total: { search: 3 },
      sluice_decisions_near_limit_total: { login: 2, search: 1 },
      sluice_store_errors_total: { api: 2 },
      sluice_fallback_decisions_total: { api: 1 },
    }
    expect(counters).toEqual(expected)
    expect(await counts(registry)).toEqual(expected)
    // The same metric names on both sides, histogram included.
    const promNames = (await registry.getMetricsAsJSON()).map((m) => m.name).sort()
    expect([...metrics.keys()].every((name) => promNames.includes(name))).toBe(true)

    const latency = metrics.get('sluice_store_latency_seconds')!
    expect(latency.descriptor.unit).toBe('s')
    const histogramCounts = Object.fromEntries(
      latency.dataPoints.map((p) => [p.attributes.policy, (p.value as { count: number }).count]),
    )
    expect(histogramCounts).toEqual({ login: 12, search: 5, api: 2 })
    // Never a label per key: every data point's attributes are the policy name alone.
    for (const metric of metrics.values()) {
      for (const point of metric.dataPoints)
        expect(Object.keys(point.attributes)).toEqual(['policy'])
    }
  })

  test('watched sources: breaker state, calls in flight, tier leases and store calls', async () => {
    const { meter, reader } = sdkMeter()
    const registry = new Registry()
    const shared = new MemoryStore()
    const tier = localTier(shared, { maxShare: 0.5 })
    const otel = openTelemetryMetrics({ meter }).watch('api', tier)
    const prom = prometheusMetrics({ registry }).watch('api', tier)
    const limiter = createLimiter({ limit: 100, window: 60_000, store: tier, onDecision: otel })
    await burst(limiter, 'k', 10)
    // Five failures in a row open the breaker (the default), on a store of its own.
    const down = createLimiter({
      limit: 5,
      window: 1000,
      store: new FailingStore(),
      onStoreError: 'allow',
    })
    await burst(down, 'k', 6)
    otel.watch('down', down)
    prom.watch('down', down)

    const stats = tier.stats()
    const byName = values(await collected(reader), 'name')
    expect(byName.sluice_breaker_state).toEqual({ api: 0, down: 2 })
    expect(byName.sluice_store_calls_in_flight).toEqual({ api: 0, down: 0 })
    expect(byName.sluice_tier_leased_units).toEqual({ api: stats.heldUnits })
    expect(byName.sluice_tier_leased_decisions_total).toEqual({ api: stats.leasedDecisions })
    expect(stats.leasedDecisions).toBeGreaterThan(0)
    const text = await registry.metrics()
    expect(text).toContain('sluice_breaker_state{name="down"} 2')
    expect(text).toContain('sluice_breaker_state{name="api"} 0')
    expect(text).toContain(
      `sluice_tier_store_calls_total{name="api",call="consume"} ${stats.storeConsumes}`,
    )
    expect(text).toContain(`sluice_tier_leased_units{name="api"} ${stats.heldUnits}`)
    await tier.close()
  })

  test('a meter that throws: decisions are unaffected, each failing instrument logged once', async () => {
    const { warnings, logger } = logged()
    const { meter } = sdkMeter()
    const broken = meterWith(meter, { createCounter: () => ({ add: throwing('exporter gone') }) })
    const { limiter } = limiterAt(0, {
      limit: 3,
      window: 1000,
      onDecision: openTelemetryMetrics({ meter: broken, logger }),
    })
    const decisions = await burst(limiter, 'k', 5)
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false, false])
    // Three counters were hit, five times in all: one line for each counter.
    expect(blamed(warnings)).toEqual([
      'sluice_decisions_allowed_total',
      'sluice_decisions_near_limit_total',
      'sluice_decisions_rejected_total',
    ])
    expect(warnings.every((w) => w.includes('exporter gone'))).toBe(true)

    // A meter whose counters cannot even be created: no counters, same decisions, one line each.
    const dead = meterWith(meter, { createCounter: throwing('no provider') })
    const more = logged()
    const quiet = limiterAt(0, {
      limit: 1,
      window: 1000,
      onDecision: openTelemetryMetrics({ meter: dead, logger: more.logger }),
    })
    expect((await burst(quiet.limiter, 'k', 3)).map((d) => d.allowed)).toEqual([true, false, false])
    expect(blamed(more.warnings)).toEqual([
      'sluice_decisions_allowed_total',
      'sluice_decisions_rejected_total',
      'sluice_decisions_shadow_rejected_total',
      'sluice_decisions_near_limit_total',
      'sluice_store_errors_total',
      'sluice_fallback_decisions_total',
    ])
  })

  test('a histogram that throws no longer drops the decision counters', async () => {
    const { warnings, logger } = logged()
    const { meter, reader } = sdkMeter()
    const broken = meterWith(meter, {
      createHistogram: () => ({ record: throwing('histogram broken') }),
    })
    const onDecision = openTelemetryMetrics({ meter: broken, logger })
    await burst(limiterAt(0, { limit: 1, window: 1000, name: 'p', onDecision }).limiter, 'k', 3)

    const metrics = await collected(reader)
    expect(values(metrics, 'policy')).toEqual({
      sluice_decisions_allowed_total: { p: 1 },
      sluice_decisions_near_limit_total: { p: 1 },
      sluice_decisions_rejected_total: { p: 2 },
    })
    expect(blamed(warnings)).toEqual(['sluice_store_latency_seconds'])
    expect(warnings[0]).toContain('histogram broken')
  })

  test('a counter that throws no longer drops the other counters, histogram or span', async () => {
    const { warnings, logger } = logged()
    const { meter, reader } = sdkMeter()
    const exporter = new InMemorySpanExporter()
    const provider = new BasicTracerProvider({
      spanProcessors: [new SimpleSpanProcessor(exporter)],
    })
    const broken = meterWith(meter, {
      createCounter: (name, options) =>
        name === 'sluice_decisions_rejected_total'
          ? { add: throwing('rejected broken') }
          : meter.createCounter(name, options),
    })
    const onDecision = openTelemetryMetrics({
      meter: broken,
      logger,
      tracer: provider.getTracer('t'),
    })
    await burst(limiterAt(0, { limit: 1, window: 1000, name: 'p', onDecision }).limiter, 'k', 3)

    const metrics = await collected(reader)
    expect(values(metrics, 'policy')).toEqual({
      sluice_decisions_allowed_total: { p: 1 },
      sluice_decisions_near_limit_total: { p: 1 },
    })
    const latency = metrics.get('sluice_store_latency_seconds')!
    expect(latency.dataPoints.map((d) => (d.value as { count: number }).count)).toEqual([3])
    expect(exporter.getFinishedSpans().map((s) => s.attributes['sluice.outcome'])).toEqual([
      'allowed',
      'rejected',
      'rejected',
    ])
    expect(blamed(warnings)).toEqual(['sluice_decisions_rejected_total'])
    await provider.shutdown()
  })

  test('a watched source that throws no longer hides the other sources', async () => {
    const { warnings, logger } = logged()
    const { meter, reader } = sdkMeter()
    const tier = localTier(new MemoryStore(), { maxShare: 0.5 })
    // Watched first, so that before the fix its error stopped every read of `api` after it.
    const otel = openTelemetryMetrics({ meter, logger })
      .watch('bad', { gauges: throwing('gauges broke') })
      .watch('api', tier)
    await burst(
      createLimiter({ limit: 100, window: 60_000, store: tier, onDecision: otel }),
      'k',
      10,
    )

    const stats = tier.stats()
    const expected = [
      'sluice_breaker_state{"name":"api"} 0',
      'sluice_store_calls_in_flight{"name":"api"} 0',
      `sluice_tier_leased_decisions_total{"name":"api"} ${stats.leasedDecisions}`,
      `sluice_tier_leased_units{"name":"api"} ${stats.heldUnits}`,
      `sluice_tier_store_calls_total{"name":"api","call":"consume"} ${stats.storeConsumes}`,
      `sluice_tier_store_calls_total{"name":"api","call":"refund"} ${stats.storeRefunds}`,
    ]
    // collected() also asserts the SDK saw no callback error.
    expect(watchedPoints(await collected(reader))).toEqual(expected)
    expect(watchedPoints(await collected(reader))).toEqual(expected)
    // Read by every watched instrument at both collections, reported once.
    expect(blamed(warnings)).toEqual(['bad'])
    expect(warnings[0]).toContain('gauges broke')
    await tier.close()
  })

  test('an instrument the meter cannot create leaves out that one alone', async () => {
    const { warnings, logger } = logged()
    const { meter, reader } = sdkMeter()
    const broken = meterWith(meter, {
      createObservableGauge: (name, options) => {
        if (name === 'sluice_breaker_state') throw new Error('no gauge for you')
        return meter.createObservableGauge(name, options)
      },
    })
    const tier = localTier(new MemoryStore(), { maxShare: 0.5 })
    const otel = openTelemetryMetrics({ meter: broken, logger }).watch('api', tier)
    await burst(
      createLimiter({ limit: 100, window: 60_000, store: tier, onDecision: otel }),
      'k',
      10,
    )

    const metrics = await collected(reader)
    expect([...metrics.keys()].sort()).toEqual([
      'sluice_decisions_allowed_total',
      'sluice_store_calls_in_flight',
      'sluice_store_latency_seconds',
      'sluice_tier_leased_decisions_total',
      'sluice_tier_leased_units',
      'sluice_tier_store_calls_total',
    ])
    expect(blamed(warnings)).toEqual(['sluice_breaker_state'])
    await tier.close()
  })

  test('no span by default; an opt-in span per store call, with the outcome and no key', async () => {
    const exporter = new InMemorySpanExporter()
    const provider = new BasicTracerProvider({
      spanProcessors: [new SimpleSpanProcessor(exporter)],
    })
    const tracer = provider.getTracer('test')
    const { meter } = sdkMeter()
    await burst(
      limiterAt(0, { limit: 1, window: 1000, onDecision: openTelemetryMetrics({ meter }) }).limiter,
      'k',
      2,
    )
    expect(exporter.getFinishedSpans()).toHaveLength(0)

    const traced = openTelemetryMetrics({ meter, tracer })
    await burst(
      limiterAt(0, { limit: 1, window: 1000, name: 'p', onDecision: traced }).limiter,
      'secret-key',
      2,
    )
    await createLimiter({
      limit: 1,
      window: 1000,
      name: 'p',
      store: failing,
      onStoreError: 'deny',
      onDecision: traced,
    }).consume('k')
    const spans = exporter.getFinishedSpans()
    expect(spans.map((s) => [s.name, s.attributes['sluice.outcome'], s.status.code])).toEqual([
      ['sluice.store.consume', 'allowed', 0],
      ['sluice.store.consume', 'rejected', 0],
      ['sluice.store.consume', 'rejected', 2],
    ])
    expect(JSON.stringify(spans.map((s) => s.attributes))).not.toContain('secret-key')
    await provider.shutdown()
  })

  test('options are checked', () => {
    const { meter } = sdkMeter()
    expect(() => openTelemetryMetrics({ meter, prefix: 'bad-prefix' })).toThrow(
      '`prefix` must be an instrument name prefix',
    )
    expect(() => openTelemetryMetrics({ meter, nearLimitRatio: 1 })).toThrow(
      '`nearLimitRatio` must be a number from 0 up to (not including) 1; got 1',
    )
    expect(() => openTelemetryMetrics({ meter: {} as OtelMeter })).toThrow('`meter` must be')
    expect(() => openTelemetryMetrics({ meter }).watch('', {})).toThrow('`name` must be')
  })

  test('tracer: true without @opentelemetry/api blames `tracer: true`, not the meter', () => {
    const { meter } = sdkMeter()
    // A fresh core whose require of the package fails, as in an app that never installed it.
    jest.doMock('@opentelemetry/api', throwing("Cannot find module '@opentelemetry/api'"))
    try {
      jest.isolateModules(() => {
        const { openTelemetryMetrics: isolated } =
          jest.requireActual<typeof import('@sluice/core')>('@sluice/core')
        expect(() => isolated({ meter, tracer: true })).toThrow(
          'openTelemetryMetrics({ tracer: true }) needs the optional peer dependency `@opentelemetry/api`: npm install @opentelemetry/api',
        )
        expect(() => isolated()).toThrow(
          'openTelemetryMetrics() without a `meter` needs the optional peer dependency `@opentelemetry/api`',
        )
        expect(typeof isolated({ meter })).toBe('function')
      })
    } finally {
      jest.dontMock('@opentelemetry/api')
    }
  })

  test('core never imports the OpenTelemetry types: apps without it type-check without it', () => {
    const src = join(__dirname, '..', 'src')
    const files = readdirSync(src, { recursive: true, encoding: 'utf8' }).filter((f) =>
      f.endsWith('.ts'),
    )
    const importing = files.filter((f) =>
      /from '@opentelemetry|import\('@opentelemetry/.test(readFileSync(join(src, f), 'utf8')),
    )
    expect(importing).toEqual([])
  })
})
