import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DurableObjectStore } from '@sluice/cloudflare'
import { ConfigError } from '@sluice/core'
import { bundleWorker, wellInsideAMinute, workerStatuses } from '@sluice/testkit'
import { Miniflare, type MiniflareOptions } from 'miniflare'

// The Worker example (examples/cloudflare-worker: @sluice/fetch, 20 a minute per address, in
// Durable Objects) in real workerd: two Workers (two isolates) share one count, and a restart
// of the runtime on the same storage loses nothing.
const EXAMPLE = join(__dirname, '../../../examples/cloudflare-worker')

let script: string
const dirs: string[] = []

beforeAll(async () => {
  script = await bundleWorker(join(EXAMPLE, 'src/index.ts'))
})

afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

/** What the example's wrangler.toml declares: compatibility date, binding and class. */
function wrangler(): { date: string; binding: string; className: string } {
  const toml = readFileSync(join(EXAMPLE, 'wrangler.toml'), 'utf8')
  const read = (name: string) => new RegExp(`^${name} = "([^"]+)"`, 'm').exec(toml)?.[1] ?? ''
  return { date: read('compatibility_date'), binding: read('name'), className: read('class_name') }
}

/** Workers `edge-a` (which owns the objects) and `edge-b`, both running the example. */
function twoWorkers(persist?: string): MiniflareOptions {
  const { date, className } = wrangler()
  const binding = 'SLUICE_LIMITER'
  return {
    durableObjectsPersist: persist ?? false,
    workers: [
      {
        name: 'edge-a',
        modules: true,
        script,
        compatibilityDate: date,
        durableObjects: { [binding]: className },
      },
      {
        name: 'edge-b',
        modules: true,
        script,
        compatibilityDate: date,
        durableObjects: { [binding]: { className, scriptName: 'edge-a' } },
      },
    ],
  }
}

const count = (list: number[], status: number) => list.filter((s) => s === status).length

test('the example declares the binding the tests use', () => {
  expect(wrangler()).toEqual({
    date: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/),
    binding: 'sluice-worker-example',
    className: 'SluiceLimiterObject',
  })
  expect(readFileSync(join(EXAMPLE, 'wrangler.toml'), 'utf8')).toMatch(
    /\[\[durable_objects\.bindings\]\]\nname = "SLUICE_LIMITER"/,
  )
})

test('two Workers (two isolates) admit exactly the limit of one client between them', async () => {
  const mf = new Miniflare(twoWorkers())
  try {
    await wellInsideAMinute()
    const [a, b] = await Promise.all([
      workerStatuses(mf, 'edge-a', '203.0.113.7', 30),
      workerStatuses(mf, 'edge-b', '203.0.113.7', 30),
    ])
    expect(count([...a, ...b], 200)).toBe(20)
    expect(count([...a, ...b], 429)).toBe(40)
    // Another client has its own 20, in whichever Worker it lands.
    const other = await workerStatuses(mf, 'edge-b', '198.51.100.1', 25)
    expect([count(other, 200), count(other, 429)]).toEqual([20, 5])
  } finally {
    await mf.dispose()
  }
}, 60_000)

test('a restarted runtime on the same storage continues the count exactly', async () => {
  const persist = mkdtempSync(join(tmpdir(), 'sluice-do-'))
  dirs.push(persist)
  const first = new Miniflare(twoWorkers(persist))
  try {
    await wellInsideAMinute()
    expect(count(await workerStatuses(first, 'edge-a', '192.0.2.9', 12), 200)).toBe(12)
  } finally {
    await first.dispose()
  }
  const second = new Miniflare(twoWorkers(persist))
  try {
    const after = await workerStatuses(second, 'edge-b', '192.0.2.9', 12)
    expect([count(after, 200), count(after, 429)]).toEqual([8, 4])
  } finally {
    await second.dispose()
  }
}, 60_000)

test('a missing namespace binding is a ConfigError naming the binding', () => {
  expect(() => DurableObjectStore.fromEnv({}, 'SLUICE_LIMITER')).toThrow(ConfigError)
  expect(() => DurableObjectStore.fromEnv({ OTHER: {} }, 'SLUICE_LIMITER')).toThrow(
    /`env\.SLUICE_LIMITER` must be a Durable Object namespace binding .*; got undefined/,
  )
  expect(() => new DurableObjectStore({ namespace: undefined as never })).toThrow(
    /`namespace` must be a Durable Object namespace binding/,
  )
})

test('the block cache answers a key over its limit without a subrequest', async () => {
  const counting = await bundleWorker(join(__dirname, 'fixtures/counting-worker.ts'))
  const mf = new Miniflare({
    modules: true,
    script: counting,
    compatibilityDate: wrangler().date,
    durableObjects: { SLUICE_LIMITER: 'SluiceLimiterObject' },
  })
  try {
    const sent = async (path: string) => {
      const before = Number(await (await mf.dispatchFetch('http://w.test/subrequests')).text())
      const statuses: number[] = []
      for (let i = 0; i < 20; i++) {
        const response = await mf.dispatchFetch(`http://w.test${path}`, {
          headers: { 'cf-connecting-ip': '192.0.2.44' },
        })
        await response.text()
        statuses.push(response.status)
      }
      const after = Number(await (await mf.dispatchFetch('http://w.test/subrequests')).text())
      return {
        admitted: count(statuses, 200),
        refused: count(statuses, 429),
        calls: after - before,
      }
    }
    // 5 admitted, then the first refusal asks the object; the next 14 are answered here.
    expect(await sent('/')).toEqual({ admitted: 5, refused: 15, calls: 6 })
    expect(await sent('/uncached')).toEqual({ admitted: 5, refused: 15, calls: 20 })
  } finally {
    await mf.dispose()
  }
})
