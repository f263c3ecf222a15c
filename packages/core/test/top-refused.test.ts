import { Registry } from 'prom-client'
import {
  createLimiter,
  MemoryStore,
  prometheusMetrics,
  type Store,
  type StoreBlock,
  type StoreRefund,
  type StoreRequest,
} from '@sluice/core'
import { createHttpLimiter } from '@sluice/http'
import { SpaceSaving } from '../src/metrics/space-saving'
import { burst, limiterAt } from './helpers'

/** A real MemoryStore behind a switch: `down` fails every call, as a dead shared store would. */
class SwitchedStore implements Store {
  down = false
  private readonly inner = new MemoryStore()
  private pass<T>(call: () => Promise<T>): Promise<T> {
    return this.down ? Promise.reject(new Error('store is down')) : call()
  }
  consume(r: StoreRequest) {
    return this.pass(() => this.inner.consume(r))
  }
  peek(r: StoreRequest) {
    return this.pass(() => this.inner.peek(r))
  }
  refund(r: StoreRefund) {
    return this.pass(() => this.inner.refund(r))
  }
  penalize(r: StoreRequest) {
    return this.pass(() => this.inner.penalize(r))
  }
  block(r: StoreBlock) {
    return this.pass(() => this.inner.block(r))
  }
  reset(key: string, policies: Parameters<Store['reset']>[1]) {
    return this.pass(() => this.inner.reset(key, policies))
  }
}

describe('Space-Saving summary', () => {
  test('a million distinct keys: memory stays at k slots, heavy keys are found within N/k', () => {
    const k = 100
    const summary = new SpaceSaving(k)
    // Ten heavy keys, 20 000 refusals each, among a flood of 1 000 000 keys seen once each.
    const heavy = Array.from({ length: 10 }, (_, i) => `heavy-${i}`)
    let n = 0
    for (let i = 0; i < 1_000_000; i++) {
      summary.offer(`flood-${i}`)
      n++
      if (i % 50 === 0) {
        for (const key of heavy) summary.offer(key)
        n += heavy.length
      }
    }
    const trueHeavy = 1_000_000 / 50 // offered at i = 0, 50, 100, ...
    expect(summary.total).toBe(n)
    expect(summary.size).toBe(k) // fixed memory: k slots, whatever the number of keys
    const top = summary.items().slice(0, 10)
    expect(top.map((h) => h.key).sort()).toEqual([...heavy].sort())
    for (const hit of top) {
      expect(hit.count).toBeGreaterThanOrEqual(trueHeavy) // never understates
      expect(hit.count - trueHeavy).toBeLessThanOrEqual(n / k) // overstates by at most N/k
      expect(hit.count - hit.error).toBeLessThanOrEqual(trueHeavy) // the stated error covers it
    }
    // Every flood key's count is bounded too: its true count is 1.
    for (const hit of summary.items().slice(10))
      expect(hit.count - hit.error).toBeLessThanOrEqual(1)
  })

  test('fewer keys than k are counted exactly', () => {
    const summary = new SpaceSaving(4)
    for (const key of ['a', 'b', 'a', 'c', 'a', 'b']) summary.offer(key)
    expect(summary.items()).toEqual([
      { key: 'a', count: 3, error: 0 },
      { key: 'b', count: 2, error: 0 },
      { key: 'c', count: 1, error: 0 },
    ])
  })
})

describe('limiter.topRefused', () => {
  test('counts refusals per key over the current and the last interval, then forgets', async () => {
    const { limiter, clock } = limiterAt(0, {
      limit: 1,
      window: 1_000_000,
      topRefused: { k: 10, intervalMs: 60_000 },
    })
    await burst(limiter, 'alice', 5) // 4 refused
    await burst(limiter, 'bob', 3) // 2 refused
    await burst(limiter, 'carol', 1) // none
    expect(limiter.topRefused()).toEqual([
      { key: 'alice', count: 4, error: 0 },
      { key: 'bob', count: 2, error: 0 },
    ])
    clock.now = 70_000 // the next interval: the last one still counts
    await burst(limiter, 'bob', 3)
    expect(limiter.topRefused(1)).toEqual([{ key: 'bob', count: 5, error: 0 }])
    clock.now = 190_000 // two intervals later: nothing recent
    expect(limiter.topRefused()).toEqual([])
  })

  test('shadow refusals count; admitted requests do not', async () => {
    const { limiter } = limiterAt(0, { limit: 2, window: 1000, shadow: true, topRefused: true })
    const decisions = await burst(limiter, 'k', 5)
    expect(decisions.every((d) => d.allowed)).toBe(true)
    expect(limiter.topRefused()).toEqual([{ key: 'k', count: 3, error: 0 }])
  })

  test('exported as a metric with hashed keys by default, truncated or raw when asked', async () => {
    const registry = new Registry()
    const metrics = prometheusMetrics({ registry })
    const hashed = limiterAt(0, { limit: 1, window: 1000, topRefused: { exported: 1 } }).limiter
    const cut = limiterAt(0, {
      limit: 1,
      window: 1000,
      topRefused: { reveal: { truncate: 4 } },
    }).limiter
    const raw = limiterAt(0, { limit: 1, window: 1000, topRefused: { reveal: 'raw' } }).limiter
    for (const limiter of [hashed, cut, raw]) {
      await burst(limiter, 'user@example.com', 3)
      await burst(limiter, 'other@example.com', 2)
    }
    metrics.watch('hashed', hashed).watch('cut', cut).watch('raw', raw)
    const lines = (await registry.metrics())
      .split('\n')
      .filter((line) => line.startsWith('sluice_top_refused{'))
    expect(lines).toHaveLength(1 + 2 + 2) // `exported` bounds the series per limiter
    expect(lines).toContain('sluice_top_refused{name="cut",key="user…"} 2')
    expect(lines).toContain('sluice_top_refused{name="raw",key="user@example.com"} 2')
    const hashedLine = lines.find((line) => line.includes('name="hashed"'))!
    expect(hashedLine).toMatch(/^sluice_top_refused\{name="hashed",key="[A-Za-z0-9_-]{12}"\} 2$/)
    expect(lines.filter((l) => !l.includes('name="raw"')).join()).not.toContain('example.com')
  })

  test('a stats line per finished interval, and the keys in the outage lines', async () => {
    const warnings: string[] = []
    const logger = { warn: (message: string) => void warnings.push(message) }
    const store = new SwitchedStore()
    const clock = { now: 0 }
    const limiter = createLimiter({
      limit: 1,
      window: 1_000_000,
      store,
      clock: () => clock.now,
      logger,
      onStoreError: 'deny',
      topRefused: { intervalMs: 10_000, log: true, reveal: 'raw' },
    })
    await burst(limiter, 'mallory', 4)
    store.down = true
    await limiter.consume('eve')
    expect(warnings[0]).toMatch(/is failing .*; most refused keys: mallory \(3\)$/)
    store.down = false
    await limiter.consume('eve') // admitted: the denial during the outage charged nothing
    expect(warnings[1]).toMatch(/recovered after .* most refused keys: mallory \(3\), eve \(1\)$/)
    clock.now = 10_000
    await burst(limiter, 'zed', 2) // the next refusal closes the interval
    expect(warnings[2]).toBe(
      '[sluice] 4 requests refused in the last 10000 ms; most refused keys: mallory (3), eve (1)',
    )
  })

  test('bad options and arguments name themselves', () => {
    const make = (topRefused: unknown) =>
      createLimiter({ limit: 1, window: 1000, topRefused } as never)
    expect(() => make({ k: 0 })).toThrow(
      '`topRefused.k` must be a whole number from 1 to 100000; got 0',
    )
    expect(() => make({ k: 1.5 })).toThrow('`topRefused.k`')
    expect(() => make({ reveal: 'plain' })).toThrow('`topRefused.reveal`')
    expect(() => make({ reveal: { truncate: 0 } })).toThrow('`topRefused.reveal.truncate`')
    expect(() => make('yes')).toThrow('`topRefused` must be')
    expect(() => createLimiter({ limit: 1, window: 1000 }).topRefused()).toThrow(
      'topRefused() needs the limiter option `topRefused`',
    )
    // Through an adapter's options too (not with rules).
    const http = createHttpLimiter(
      { limit: 1, window: '1m', topRefused: true },
      { framework: 'Test', resetStyle: 'epoch' },
    )
    expect(http.limiter!.topRefused()).toEqual([])
    expect(() =>
      createHttpLimiter(
        { topRefused: true, rules: { domain: 'd', descriptors: [] }, descriptors: () => [] },
        { framework: 'Test', resetStyle: 'epoch' },
      ),
    ).toThrow('`topRefused` must be unset when `rules` is given')
    expect(() => make(true).topRefused(0)).toThrow('`n` must be a positive whole number; got 0')
  })
})
