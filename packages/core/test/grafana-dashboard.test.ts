import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Registry } from 'prom-client'
import { createLimiter, localTier, MemoryStore, prometheusMetrics } from '@sluice/core'
import { createHttpLimiter } from '@sluice/http'
import { FailingStore } from '@sluice/testkit'
import { burst } from './helpers'

const DASHBOARD = join(__dirname, '..', '..', '..', 'examples', 'metrics', 'grafana-dashboard.json')

interface Panel {
  title: string
  targets: { expr: string }[]
}

/** Every PromQL expression of the dashboard, with its panel's title. */
function expressions(): { title: string; expr: string }[] {
  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: Panel[] }
  return dashboard.panels.flatMap((p) => p.targets.map(({ expr }) => ({ title: p.title, expr })))
}

/** A registry that every Sluice metric has samples in: decisions, watched stores, tier, HTTP. */
async function filledRegistry(): Promise<string> {
  const registry = new Registry()
  const metrics = prometheusMetrics({ registry })
  const tier = localTier(new MemoryStore())
  const tiered = createLimiter({ limit: 3, window: '1h', store: tier, onDecision: metrics })
  await burst(tiered, 'k', 2)
  const limiter = createLimiter({
    limit: 3,
    window: '1h',
    concurrency: 5,
    topRefused: true,
    onDecision: metrics,
  })
  const held = await burst(limiter, 'k', 4)
  const shadow = createLimiter({ limit: 1, window: '1h', shadow: true, onDecision: metrics })
  await burst(shadow, 'k', 2)
  const down = createLimiter({
    limit: 1,
    window: '1h',
    store: new FailingStore(),
    onStoreError: 'allow',
    logger: { warn: () => {} },
    onDecision: metrics,
  })
  await burst(down, 'k', 1)
  metrics.watch('api', limiter).watch('tier', tiered).watch('down', down)
  // An HTTP limiter with this recorder is watched by it (held, waiting).
  const http = createHttpLimiter(
    { limit: 1, window: '1m', onDecision: metrics },
    { framework: 'Test', resetStyle: 'epoch' },
  )
  const text = await registry.metrics()
  for (const d of held) await d.slot?.release()
  await tier.close()
  http.close() // held until here: watched sources are held weakly
  return text
}

test('the Grafana dashboard queries only metrics and labels Sluice exports', async () => {
  const text = await filledRegistry()
  const samples = text.split('\n').filter((line) => line.startsWith('sluice_'))
  const series = (name: string) => samples.filter((line) => /^[a-z_]+/.exec(line)![0] === name)
  const exprs = expressions()
  expect(exprs.length).toBeGreaterThanOrEqual(10)
  const used = new Set<string>()
  for (const { title, expr } of exprs) {
    const names = expr.match(/sluice_[a-z_]+/g) ?? []
    expect({ title, names: names.length }).not.toEqual({ title, names: 0 })
    const labels = [...expr.matchAll(/by \(([^)]*)\)/g)].flatMap((m) => m[1].split(/,\s*/))
    for (const name of names) {
      used.add(name.replace(/_bucket$/, ''))
      const found = series(name)
      expect({ title, name, found: found.length > 0 }).toEqual({ title, name, found: true })
      for (const label of labels.filter((l) => l !== 'le' || name.endsWith('_bucket'))) {
        const labelled = found.some((line) => line.includes(`${label}="`))
        expect({ title, name, label, labelled }).toEqual({ title, name, label, labelled: true })
      }
    }
  }
  // Every metric Sluice exports has a panel.
  const exported = new Set(
    text
      .split('\n')
      .filter((line) => line.startsWith('# TYPE sluice_'))
      .map((line) => line.split(' ')[2]),
  )
  expect([...exported].filter((name) => !used.has(name))).toEqual([])
})
